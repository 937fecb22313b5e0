"""The resource metrics API (``metrics.k8s.io``: ``kubectl top``, an HPA on CPU or memory) for a node: metrics-server,
built from its own Go module (``node/build-addons.sh``), run as an :class:`~node.launcher.Addon`.

    with ControlPlane(**CONTROL_PLANE_OPTIONS) as cluster, Node(cluster, addons=[MetricsServer()]) as node:
        ...                                            # kubectl top pods; HPAs get their CPU utilization

It runs on the host, beside the control plane, not as a pod: it listens on the host's end of the node's veth pair,
which the API server (on loopback) reaches; it scrapes the kubelet's ``/metrics/resource`` on the node's address,
as its own user (the kubelet checks the client certificate against the cluster CA and asks the API server whether
that user may get ``nodes/metrics``). The API server finds it through an APIService, a Service without selector
and an EndpointSlice with that address; ``--enable-aggregator-routing`` (``CONTROL_PLANE_OPTIONS``) makes it dial
the endpoint, since the Service's cluster IP exists only inside the node's namespace (kube-proxy's rules).
"""

from __future__ import annotations

import base64
import contextlib
import time
import urllib.error
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controlplane.binaries import ControlPlaneUnavailable, run_build
from node.binaries import NodeUnavailable

if TYPE_CHECKING:
    from node.launcher import Node

BUILD_SCRIPT = Path(__file__).resolve().parent / "build-addons.sh"
USER = "poolboy-node:metrics-server"
NAMESPACE = "kube-system"
SERVICE = "metrics-server"
API_SERVICE = "v1beta1.metrics.k8s.io"
#: where metrics-server listens, on the host's end of the node's veth pair (an address of that node's slot only)
PORT = 4443
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def find_addon_binaries() -> Path:
    """The directory of the addons' binaries, building them first if this machine has not."""
    try:
        return run_build(BUILD_SCRIPT, "metrics-server needs Go 1.26 or newer to build (https://go.dev/doc/install)")
    except ControlPlaneUnavailable as error:
        raise NodeUnavailable(str(error)) from error


class MetricsServer:
    """metrics-server for one node; see the module docstring."""

    def __init__(self, resolution: str = "15s", startup_timeout: float = 90.0) -> None:
        #: how often it scrapes the kubelet (metrics-server's default and the HPA's own sync period: 15 s)
        self.resolution = resolution
        self.startup_timeout = startup_timeout

    def start(self, node: Node) -> None:
        binary = find_addon_binaries() / "metrics-server"
        layout, cluster = node.layout, node.cluster
        assert cluster.ca is not None, "the control plane is not started"
        directory = layout.path("metrics-server")
        directory.mkdir(parents=True, exist_ok=True)
        kubeconfig = cluster.write_kubeconfig(directory / "kubeconfig", USER)
        # the API server verifies it by the name of its Service (the APIService's caBundle: the cluster CA)
        cert, key = cluster.ca.serving((f"{SERVICE}.{NAMESPACE}.svc", f"{SERVICE}.{NAMESPACE}.svc.cluster.local"),
                                       (layout.host_ip,)).write(directory, "serving")
        self._grant(node)
        node.child("metrics-server", [
            str(binary), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={layout.host_ip}", f"--secure-port={PORT}",
            f"--tls-cert-file={cert}", f"--tls-private-key-file={key}",
            f"--metric-resolution={self.resolution}",
            # the Node's name resolves nowhere; the kubelet serves a self-signed certificate (no TLS bootstrap)
            "--kubelet-preferred-address-types=InternalIP", "--kubelet-insecure-tls", "--v=1",
        ], netns=False)
        self._register(node)
        deadline = time.monotonic() + self.startup_timeout
        while not self.serving(node):
            child = node.children["metrics-server"]
            if not child.alive or time.monotonic() > deadline:
                raise RuntimeError(f"metrics-server not serving node metrics after {self.startup_timeout} s; "
                                   f"{child.log_path}:\n{child.tail(4000)}")
            time.sleep(1)

    def stop(self, node: Node) -> None:
        # the APIService goes first: an unavailable one fails the API server's discovery for every client
        with contextlib.suppress(OSError, urllib.error.HTTPError):
            node.cluster.request("DELETE", f"/apis/apiregistration.k8s.io/v1/apiservices/{API_SERVICE}")
        child = node.children.pop("metrics-server", None)
        if child is not None:
            child.stop(timeout=5)

    def serving(self, node: Node) -> bool:
        """Whether the metrics API answers with the node's usage (after metrics-server's first two scrapes)."""
        try:
            found = node.cluster.request("GET", "/apis/metrics.k8s.io/v1beta1/nodes", timeout=5)
        except (OSError, ValueError):
            return False
        return bool(isinstance(found, dict) and found.get("items"))

    # --- grants and registration ---------------------------------------------------------------------------

    def _grant(self, node: Node) -> None:
        """What upstream's manifest grants metrics-server: read nodes and pods and the kubelet's metrics, check its
        callers with the API server (token and access reviews), read the requestheader CA in kube-system."""
        ensure = node.ensure
        ensure(f"{RBAC}/clusterroles", {
            "metadata": {"name": USER},
            "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                      {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]}]})
        for role in (USER, "system:auth-delegator"):
            ensure(f"{RBAC}/clusterrolebindings", {
                "metadata": {"name": f"poolboy-node:metrics-server:{role.replace(':', '-')}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [_user(USER)]})
        ensure(f"{RBAC}/namespaces/{NAMESPACE}/rolebindings", {
            "metadata": {"name": "poolboy-node:metrics-server:auth-reader", "namespace": NAMESPACE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "extension-apiserver-authentication-reader"},
            "subjects": [_user(USER)]})

    def _register(self, node: Node) -> None:
        assert node.cluster.ca is not None
        ensure = node.ensure
        ensure(f"/api/v1/namespaces/{NAMESPACE}/services", {
            "metadata": {"name": SERVICE, "namespace": NAMESPACE},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": PORT, "protocol": "TCP"}]}})
        ensure(f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices", {
            "metadata": {"name": SERVICE, "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": SERVICE,
                                    "endpointslice.kubernetes.io/managed-by": "poolboy-node"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [node.layout.host_ip], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": PORT, "protocol": "TCP"}]})
        ensure("/apis/apiregistration.k8s.io/v1/apiservices", {
            "metadata": {"name": API_SERVICE},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
                     "service": {"name": SERVICE, "namespace": NAMESPACE, "port": 443},
                     "caBundle": base64.b64encode(node.cluster.ca.certificate).decode(),
                     "groupPriorityMinimum": 100, "versionPriority": 100}})


def _user(name: str) -> dict[str, Any]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def pod_usage(node: Node, namespace: str, selector: str = "") -> dict[str, float]:
    """Each pod's CPU usage in cores (``kubectl top pods``), from the metrics API."""
    query = f"?labelSelector={selector}" if selector else ""
    found = node.cluster.request("GET", f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods{query}")
    return {item["metadata"]["name"]: sum(_cores(c["usage"]["cpu"]) for c in item["containers"])
            for item in found["items"]}


def _cores(quantity: str) -> float:
    if quantity.endswith("n"):
        return int(quantity[:-1]) / 1e9
    if quantity.endswith("u"):
        return int(quantity[:-1]) / 1e6
    if quantity.endswith("m"):
        return int(quantity[:-1]) / 1e3
    return float(quantity)

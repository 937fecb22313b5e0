"""NetworkPolicies enforced on a node: kube-router's network policy controller (its firewall only: no routing, no
service proxy), built from its own Go module (``node/build-addons.sh``), run as an :class:`~node.launcher.Addon`.

    with ControlPlane(**CONTROL_PLANE_OPTIONS) as cluster, Node(cluster, addons=[NetworkPolicies()]) as node:
        ...                                            # a pod the policies do not admit is refused

It runs inside the node's network namespace, so its iptables chains and ipsets (the pods each policy selects) are
that namespace's only, as its own user, with what upstream's manifest grants it (read pods, namespaces, nodes,
Services, endpoints and NetworkPolicies). Stopping it removes its rules: a policy left enforced with nobody keeping
its pod sets current would refuse every pod started after.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

from node import host
from node.binaries import NodeUnavailable
from node.layout import NODE_NAME
from node.metrics import find_addon_binaries

if TYPE_CHECKING:
    from node.launcher import Node

USER = "poolboy-node:kube-router"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
#: kube-router's health endpoint, inside the node's namespace
HEALTH_PORT = 20244
#: the iptables chains and ipsets of kube-router's policy controller (kube-proxy's are KUBE-SVC-, KUBE-SEP-, ...)
CHAIN_PREFIXES = ("KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-")
SET_PREFIXES = ("KUBE-SRC-", "KUBE-DST-", "kube-router-")


class NetworkPolicies:
    """kube-router's network policy controller for one node; see the module docstring."""

    def __init__(self, startup_timeout: float = 60.0) -> None:
        self.startup_timeout = startup_timeout

    def start(self, node: Node) -> None:
        if shutil.which("ipset") is None:
            raise NodeUnavailable("kube-router needs ipset: apt-get install ipset (scripts/bootstrap.sh --all does)")
        self.binary = find_addon_binaries() / "kube-router"
        directory = node.layout.path("kube-router")
        directory.mkdir(parents=True, exist_ok=True)
        kubeconfig = node.cluster.write_kubeconfig(directory / "kubeconfig", USER, server=node.layout.api_server,
                                                   tls_server_name="kubernetes")
        node.ensure(f"{RBAC}/clusterroles", {
            "metadata": {"name": USER},
            "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces", "nodes", "services", "endpoints"],
                       "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
                       "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                       "verbs": ["get", "list", "watch"]}]})
        node.ensure(f"{RBAC}/clusterrolebindings", {
            "metadata": {"name": USER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": USER},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]})
        child = node.child("kube-router", [
            str(self.binary), "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
            f"--kubeconfig={kubeconfig}", f"--hostname-override={NODE_NAME}",
            "--metrics-port=0", f"--health-port={HEALTH_PORT}", "--v=1",
        ])
        child.wait_until(lambda: self.synced(node), self.startup_timeout, "kube-router")

    def synced(self, node: Node) -> bool:
        """Whether its rules are in place: its forward chain exists in the node's namespace."""
        result = subprocess.run(host.in_netns(node.layout, ["iptables", "-S", "KUBE-ROUTER-FORWARD"]),
                                capture_output=True, check=False)
        return result.returncode == 0

    def stop(self, node: Node) -> None:
        child = node.children.pop("kube-router", None)
        if child is None:
            return
        child.stop(timeout=5)
        remove_rules(node)


def remove_rules(node: Node) -> None:
    """Remove kube-router's chains, the rules that jump to them and its ipsets from the node's namespace, leaving
    kube-proxy's. Its own ``--cleanup-config`` says it cleaned them and leaves them (v2.1.0, then panics on the
    service proxy it never ran)."""
    saved = subprocess.run(host.in_netns(node.layout, ["iptables-save"]), capture_output=True, text=True,
                           check=True).stdout
    kept = [line for line in saved.splitlines() if not any(chain in line for chain in CHAIN_PREFIXES)]
    subprocess.run(host.in_netns(node.layout, ["iptables-restore"]), input="\n".join(kept) + "\n", text=True,
                   capture_output=True, check=True)
    sets = subprocess.run(host.in_netns(node.layout, ["ipset", "list", "-n"]), capture_output=True, text=True,
                          check=True).stdout.split()
    for name in sets:
        if name.startswith(SET_PREFIXES):
            subprocess.run(host.in_netns(node.layout, ["ipset", "destroy", name]), capture_output=True, check=False)

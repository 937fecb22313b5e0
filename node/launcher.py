"""A Kubernetes node on this machine, beside a :class:`~controlplane.ControlPlane`: containerd (runc, Debian's CNI
plugins), the kubelet, kube-proxy and CoreDNS in a network namespace of the node's own, and kube-scheduler, so
Deployments get running containers, probes, Services that route and names that resolve.

    with ControlPlane(**CONTROL_PLANE_OPTIONS) as cluster, Node(cluster) as node:
        node.import_images(archives)                   # images come from archives, never from a registry
        ...                                            # kubectl get nodes: poolboy-node Ready

Everything of a node is below its directory, its network namespace and its cgroup, so ``stop()`` (or the next
node of the same slot, after a crash) leaves nothing behind; see ``node/README.md``.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import subprocess
import tempfile
import time
import urllib.error
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from controlplane.cluster import KUBELET_CLIENT, ControlPlane
from node import configs, host
from node.binaries import CNI_PLUGINS, NodeBinaries, find_node_binaries
from node.images import SANDBOX_REPOSITORY, Image, build_images, named
from node.layout import API_PORT, NODE_NAME, Layout, SlotLock
from procutil import ChildProcess, InTemporaryDirectory

#: what the control plane needs for a node: the Node authorizer and NodeRestriction (a kubelet may change only its
#: own Node and its pods), and every default controller (endpoint slices for Services, the root CA ConfigMap every
#: service-account token volume mounts, node lifecycle, pod GC, HPA, PodDisruptionBudgets, StatefulSets, ...)
CONTROL_PLANE_OPTIONS: dict[str, Any] = {
    "apiserver_args": ["--authorization-mode=Node", "--enable-admission-plugins=NodeRestriction",
                       # the Node's name resolves nowhere: reach kubelets (logs, exec) by their address
                       "--kubelet-preferred-address-types=InternalIP",
                       # an aggregated API (node/metrics.py) is dialled at its endpoint: a Service's cluster IP
                       # exists only inside the node's namespace
                       "--enable-aggregator-routing=true"],
    "controllers": ("*",),
}
#: the node's components' own users; the audit counters leave their requests out as the control plane's own
COREDNS_USER = "poolboy-node:coredns"
NODE_USER = f"system:node:{NODE_NAME}"


class Addon(Protocol):
    """Something more a node runs once it is Ready (a metrics source, a network policy controller): started in
    order after the node, stopped in reverse before it; :meth:`Node.child` starts its processes in the node's
    namespace and cgroup, so they are stopped, killed and cleaned up with the node's own."""

    def start(self, node: Node) -> None: ...

    def stop(self, node: Node) -> None: ...


class Node(InTemporaryDirectory):
    """One node's processes and files; see the module docstring."""

    def __init__(self, cluster: ControlPlane, log_dir: str | Path | None = None,
                 binaries: NodeBinaries | None = None, images: list[Image] | None = None,
                 addons: Sequence[Addon] = (), startup_timeout: float = 120.0) -> None:
        self.cluster = cluster
        self._tmp = tempfile.TemporaryDirectory(prefix="pbnode-", dir="/tmp")
        self.dir = Path(self._tmp.name)
        self.log_dir = Path(log_dir) if log_dir else self.dir / "logs"
        self._binaries = binaries
        self.images = images
        self.addons = list(addons)
        self.startup_timeout = startup_timeout
        self._slot: SlotLock | None = None
        self.layout = Layout(-1, self.dir)
        self.children: dict[str, ChildProcess] = {}

    @property
    def binaries(self) -> NodeBinaries:
        assert self._binaries is not None, "not started"
        return self._binaries

    # --- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> Node:
        self._binaries = self._binaries or find_node_binaries()
        self.images = self.images or build_images(self.binaries["pause"])
        self._slot = SlotLock()
        self.layout = Layout(self._slot.slot, self.dir)
        host.remove_leftovers(self._slot.previous_dir)
        self._slot.record(self.dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            host.create_cgroups(self.layout)
            host.create_network(self.layout)
            self._write_files()
            self._grant()
            self.start_forwarder()
            self._publish_api_endpoint()
            self.start_containerd()
            self.import_images([image.archive for image in self.images])
            self.start_kubelet()
            self.start_kube_proxy()
            self.start_coredns()
            self.start_scheduler()
            self.wait_ready()
            for addon in self.addons:
                addon.start(self)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for addon in reversed(self.addons):
            addon.stop(self)
        # the kubelet first, so it restarts no container while the rest goes; then any addon's left
        for name in ("kubelet", "kube-scheduler", "kube-proxy", "coredns", "containerd", "api-forwarder",
                     *self.children):
            child = self.children.pop(name, None)
            if child is not None:
                child.stop(timeout=5)
        if self._slot is None:
            return
        host.kill_cgroup(self.layout)     # containers, their shims, and any daemon left
        host.unmount_below(self.dir)      # their root filesystems, volumes and network namespaces
        host.remove_network(self.layout)
        self._slot.release()
        self._slot = None

    # --- files, credentials and grants --------------------------------------------------------------------

    def _write_files(self) -> None:
        layout, ca = self.layout, self.cluster.ca_file
        for directory in ("cni/net.d", "pod-logs", "kubelet", "containerd"):
            layout.path(directory).mkdir(parents=True, exist_ok=True)
        files = {
            "containerd.toml": configs.containerd(layout, self.binaries["runc"], CNI_PLUGINS,
                                                  named(self.images or [], SANDBOX_REPOSITORY)),
            "cni/net.d/10-poolboy-node.conflist": configs.cni_network(layout),
            "kubelet.yaml": configs.kubelet(layout, ca),
            "kube-proxy.yaml": configs.kube_proxy(layout, layout.path("kube-proxy.kubeconfig")),
            "Corefile": configs.corefile(layout, layout.path("coredns.kubeconfig")),
            "resolv.conf": configs.resolv_conf(layout),
        }
        for name, text in files.items():
            layout.path(name).write_text(text)
        users = {"kubelet": (NODE_USER, ("system:nodes",)), "kube-proxy": ("system:kube-proxy", ()),
                 "coredns": (COREDNS_USER, ())}
        for name, (user, groups) in users.items():
            self.cluster.write_kubeconfig(layout.path(f"{name}.kubeconfig"), user, groups,
                                          server=layout.api_server, tls_server_name="kubernetes")
        # the scheduler runs on the host, beside the control plane: straight to the API server
        self.cluster.write_kubeconfig(layout.path("kube-scheduler.kubeconfig"), "system:kube-scheduler",
                                      server=self.cluster.apiserver_url)

    def _grant(self) -> None:
        """The grants kubeadm makes for a node's components: the kubelet checks its callers with the API server
        (token and access reviews), the API server may use every kubelet endpoint (logs, exec), CoreDNS reads
        Services, EndpointSlices and Namespaces."""
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        self.ensure(f"{rbac}/clusterroles", {
            "metadata": {"name": COREDNS_USER},
            "rules": [{"apiGroups": [""], "resources": ["services", "namespaces", "pods"],
                       "verbs": ["list", "watch"]},
                      {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                       "verbs": ["list", "watch"]}]})
        for role, user in (("system:auth-delegator", NODE_USER), ("system:kubelet-api-admin", KUBELET_CLIENT),
                           (COREDNS_USER, COREDNS_USER)):
            self.ensure(f"{rbac}/clusterrolebindings", {
                "metadata": {"name": f"poolboy-node:{role.replace(':', '-')}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})

    def ensure(self, path: str, body: dict[str, Any]) -> None:
        """Create ``body`` at ``path``, or replace what is there (a cluster a node ran on before)."""
        try:
            self.cluster.request("POST", path, body)
        except urllib.error.HTTPError as error:
            if error.code != 409:
                raise
            name = body["metadata"]["name"]
            live = self.cluster.request("GET", f"{path}/{name}")
            body = {**body, "metadata": {**body["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}}
            self.cluster.request("PUT", f"{path}/{name}", body)

    def _publish_api_endpoint(self) -> None:
        """The ``kubernetes`` Service's endpoint: the forwarder on the host's end of the veth pair (the control
        plane runs with no endpoint reconciler, since the API server itself listens on loopback only)."""
        self.ensure("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "kubernetes",
                                    "endpointslice.kubernetes.io/managed-by": "poolboy-node"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [self.layout.host_ip], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": API_PORT, "protocol": "TCP"}],
        })

    # --- components ----------------------------------------------------------------------------------------

    def child(self, name: str, argv: list[str], *, netns: bool = True) -> ChildProcess:
        """Start ``argv`` as the node component ``name`` (log ``<log_dir>/<name>.log``), in the node's ``system``
        cgroup and, unless ``netns`` is false, its network namespace; :meth:`stop` stops it."""
        argv = host.in_netns(self.layout, argv) if netns else argv
        child = ChildProcess(host.join_system_cgroup(self.layout, argv), self.log_dir / f"{name}.log",
                             env={"PATH": f"{self.binaries.directory}:/usr/sbin:/usr/bin:/sbin:/bin",
                                  "GOMAXPROCS": "2"}).start()
        self.children[name] = child
        return child

    def start_forwarder(self) -> None:
        """The API server, reached from the node's namespace: a TCP forwarder on the host's end of the veth pair to
        the API server on loopback (which keeps listening on loopback only)."""
        target = self.cluster.apiserver_url.removeprefix("https://")
        child = self.child("api-forwarder", [
            "socat", f"TCP-LISTEN:{API_PORT},bind={self.layout.host_ip},reuseaddr,fork,backlog=512",
            f"TCP:{target},nodelay"], netns=False)
        child.wait_until(lambda: _connects(self.layout.host_ip, API_PORT), self.startup_timeout, "api forwarder")

    def start_containerd(self) -> None:
        child = self.child("containerd", [str(self.binaries["containerd"]), "--config",
                                           str(self.layout.path("containerd.toml"))])
        child.wait_until(lambda: self._ctr("version", check=False).returncode == 0, self.startup_timeout,
                         "containerd")

    def start_kubelet(self) -> None:
        self.child("kubelet", [
            str(self.binaries["kubelet"]), f"--config={self.layout.path('kubelet.yaml')}",
            f"--kubeconfig={self.layout.path('kubelet.kubeconfig')}",
            f"--root-dir={self.layout.path('kubelet')}", f"--cert-dir={self.layout.path('kubelet', 'pki')}",
            f"--hostname-override={NODE_NAME}", f"--node-ip={self.layout.node_ip}", "--v=1",
        ])

    def start_kube_proxy(self) -> None:
        self.child("kube-proxy", [str(self.binaries["kube-proxy"]),
                                   f"--config={self.layout.path('kube-proxy.yaml')}", "--v=1"])

    def start_coredns(self) -> None:
        child = self.child("coredns", [str(self.binaries["coredns"]), "-conf", str(self.layout.path("Corefile"))])
        child.wait_until(lambda: _connects(self.layout.node_ip, 8181, netns=self.layout), self.startup_timeout,
                         "coredns")

    def start_scheduler(self) -> None:
        self.child("kube-scheduler", [
            str(self.binaries["kube-scheduler"]), f"--kubeconfig={self.layout.path('kube-scheduler.kubeconfig')}",
            "--leader-elect=false", "--secure-port=0", "--v=1"], netns=False)

    def processes(self) -> list[tuple[str, Callable[[], ChildProcess | None], Callable[[], None]]]:
        """(name, the process now, start it again) of each node component, for a supervisor."""
        starts = {"api-forwarder": self.start_forwarder, "containerd": self.start_containerd,
                  "kubelet": self.start_kubelet, "kube-proxy": self.start_kube_proxy,
                  "coredns": self.start_coredns, "kube-scheduler": self.start_scheduler}
        return [(name, functools.partial(self.children.get, name), start) for name, start in starts.items()]

    # --- images --------------------------------------------------------------------------------------------

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.binaries["ctr"]), "--address", str(self.layout.containerd_socket),
                               "--namespace", "k8s.io", *args], capture_output=True, text=True, check=check)

    def import_images(self, archives: list[Path]) -> None:
        """Import image archives (docker-archive or OCI tarballs, named by their tags) into the node's containerd,
        where the kubelet finds them: pods run them with ``imagePullPolicy: Never`` (or IfNotPresent)."""
        for archive in archives:
            result = self._ctr("images", "import", str(archive), check=False)
            if result.returncode != 0:
                raise RuntimeError(f"importing {archive} failed: {result.stderr.strip()}")

    def tag_image(self, source: str, target: str) -> None:
        """Give an image a second name, as a rebuilt image pushed under a new tag would arrive."""
        self._ctr("images", "tag", "--force", source, target)

    def container_pid(self, container_id: str) -> int:
        """The host pid of a container's first process (``containerStatuses[].containerID``, with or without its
        ``containerd://`` prefix), for what only the node's root can do to it (SIGSTOP a hung process)."""
        wanted = container_id.removeprefix("containerd://")
        for line in self._ctr("tasks", "list").stdout.splitlines()[1:]:
            task, pid, *_ = line.split()
            if task == wanted:
                return int(pid)
        raise LookupError(f"no running task {wanted} on the node")

    def pod_memory_peak(self, pod_uid: str) -> int:
        """The most memory a pod's containers have used together since it started (bytes, its cgroup's
        ``memory.max_usage_in_bytes``): what its limits must hold."""
        tree = Path("/sys/fs/cgroup/memory") / self.layout.cgroup.lstrip("/") / "kubepods"
        for directory in tree.glob(f"**/pod{pod_uid}"):
            return int((directory / "memory.max_usage_in_bytes").read_text())
        raise LookupError(f"no cgroup of pod {pod_uid} on the node")

    def image_names(self) -> list[str]:
        """The names of the images the node holds."""
        return self._ctr("images", "list", "--quiet").stdout.split()

    # --- readiness -----------------------------------------------------------------------------------------

    def wait_ready(self) -> None:
        """Until the Node is Ready (its runtime and network are), or a component dies first."""
        deadline = time.monotonic() + self.startup_timeout
        while not self.ready():
            for name, child in self.children.items():
                if not child.alive:
                    raise RuntimeError(f"{name} exited with {child.process and child.process.returncode}; "
                                       f"{child.log_path}:\n{child.tail(4000)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {NODE_NAME} not Ready after {self.startup_timeout} s; kubelet log:\n"
                                   f"{self.children['kubelet'].tail(4000)}")
            time.sleep(0.2)

    def ready(self) -> bool:
        try:
            node = self.cluster.request("GET", f"/api/v1/nodes/{NODE_NAME}", timeout=5)
        except (OSError, ValueError):
            return False
        conditions = (node.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _connects(address: str, port: int, netns: Layout | None = None) -> bool:
    """Whether a TCP connection to ``address:port`` (from inside a node's namespace, when given) succeeds."""
    if netns is None:
        with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=1):
            return True
        return False
    argv = ["bash", "-c", f"exec 3<>/dev/tcp/{address}/{port}"]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(host.in_netns(netns, argv), capture_output=True, timeout=3).returncode == 0
    return False

"""Where one node lives: its slot on this machine (a network namespace, a veth pair, a cgroup subtree), its files,
and the addresses its components listen on. Several nodes (a test run beside ``poolboy dev``) each take a free
slot, so nothing of one (iptables rules, cgroups, sockets) is seen by another; a slot is held by an exclusive lock
on a file under ``/run/poolboy-node`` for the node's life."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

SLOTS = 32
LOCK_DIR = Path("/run/poolboy-node")
#: the node's name (the Node object, the kubelet's certificate, kube-proxy's hostname)
NODE_NAME = "poolboy-node"
#: every pod of a node gets an address from here, on the bridge inside the node's network namespace
POD_CIDR = "10.244.0.0/24"
POD_GATEWAY = "10.244.0.1"
CLUSTER_DOMAIN = "cluster.local"
#: the port the API server is forwarded to, on the host's end of the node's veth pair
API_PORT = 6443
KUBELET_PORT = 10250


@dataclass(frozen=True)
class Layout:
    """One node's names, addresses and files (see the module docstring)."""

    slot: int
    dir: Path

    @property
    def netns(self) -> str:
        return f"poolboy-node-{self.slot}"

    @property
    def netns_path(self) -> Path:
        return Path("/run/netns") / self.netns

    @property
    def host_veth(self) -> str:
        return f"pbnode{self.slot}"

    @property
    def host_ip(self) -> str:
        """The host's end of the veth pair: where the node reaches the API server (forwarded to loopback)."""
        return f"10.243.{self.slot}.1"

    @property
    def node_ip(self) -> str:
        """The node's end: the Node's InternalIP, where the kubelet serves and cluster DNS answers."""
        return f"10.243.{self.slot}.2"

    @property
    def api_server(self) -> str:
        return f"https://{self.host_ip}:{API_PORT}"

    @property
    def cgroup(self) -> str:
        """The node's cgroup (in every v1 hierarchy): the kubelet's cgroupRoot, its pods below it, and ``system``
        beside them for the node's own daemons, so that stopping the node kills everything it started."""
        return f"/poolboy-node-{self.slot}"

    @property
    def containerd_socket(self) -> Path:
        return self.dir / "containerd.sock"

    def path(self, *parts: str) -> Path:
        return self.dir.joinpath(*parts)


class SlotLock:
    """The exclusive lock on a free slot, held until :meth:`release`."""

    def __init__(self) -> None:
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        for slot in range(SLOTS):
            fd = os.open(LOCK_DIR / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.slot, self._fd = slot, fd
            #: the directory of the node that held the slot last: what a node that died left there is removed
            self.previous_dir = Path(os.pread(fd, 4096, 0).decode(errors="replace").strip() or "/nonexistent")
            return
        raise RuntimeError(f"every one of the {SLOTS} node slots of this machine is taken ({LOCK_DIR})")

    def record(self, directory: Path) -> None:
        """Say in the lock file which directory this node uses, for the next holder of the slot."""
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, str(directory).encode(), 0)

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

"""Where a node's binaries come from: the project's own pinned build (``node/build.sh``), made once per machine into
a cache directory keyed by their versions, and Debian's CNI plugins (``scripts/bootstrap.sh --all``)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from controlplane.binaries import ControlPlaneUnavailable, run_build

BUILD_SCRIPT = Path(__file__).resolve().parent / "build.sh"
#: where Debian's containernetworking-plugins puts the CNI plugins
CNI_PLUGINS = Path("/usr/lib/cni")
#: the host tools a node needs besides its own build, and the Debian package of each
HOST_TOOLS = {"iptables": "iptables", "conntrack": "conntrack", "socat": "socat",
              "nsenter": "util-linux", "ip": "iproute2"}


class NodeUnavailable(ControlPlaneUnavailable):
    """A node cannot run here; the message says what is missing."""


@dataclass(frozen=True)
class NodeBinaries:
    directory: Path

    def __getitem__(self, name: str) -> Path:
        """The built binary ``name`` (kubelet, kube-proxy, kube-scheduler, containerd, ctr, runc, coredns...)."""
        return self.directory / name


def find_node_binaries() -> NodeBinaries:
    """The node's binaries, building them first if this machine has not (progress lines on stderr)."""
    if os.geteuid() != 0:
        raise NodeUnavailable("a node needs root: network namespaces, cgroups and mounts of its own")
    missing = [package for tool, package in HOST_TOOLS.items() if shutil.which(tool) is None]
    if not (CNI_PLUGINS / "bridge").exists():
        missing.append("containernetworking-plugins")
    if missing:
        raise NodeUnavailable(f"a node needs {', '.join(sorted(set(missing)))}: apt-get install them "
                              "(scripts/bootstrap.sh --all does)")
    directory = run_build(BUILD_SCRIPT, "a node needs Go 1.26 or newer to build kubelet, containerd and CoreDNS "
                                        "(https://go.dev/doc/install)")
    return NodeBinaries(directory)

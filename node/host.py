"""What a node sets up on the host and takes down again: its network namespace (a veth pair to the host, the
forwarding and bridge-netfilter settings kube-proxy's rules need, all inside that namespace), its cgroup subtree in
every cgroup v1 hierarchy, and, when it stops, every process, mount and directory it left. Nothing here touches the
host's own iptables or sysctls."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from node.layout import Layout

CGROUP_ROOT = Path("/sys/fs/cgroup")


def run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


def in_netns(layout: Layout, argv: list[str]) -> list[str]:
    """``argv`` run inside the node's network namespace (only that namespace: ``ip netns exec`` would also remount
    ``/sys``, hiding the cgroup hierarchies the kubelet and runc need)."""
    return ["nsenter", f"--net={layout.netns_path}", "--", *argv]


# --- network ---------------------------------------------------------------------------------------------------

def create_network(layout: Layout) -> None:
    """The node's namespace, joined to the host by a veth pair: the host's end holds :attr:`Layout.host_ip` (where
    the node reaches the API server), the node's end :attr:`Layout.node_ip` and a default route through the host."""
    remove_network(layout)
    run("ip", "netns", "add", layout.netns)
    run("ip", "link", "add", layout.host_veth, "type", "veth", "peer", "name", "eth0", "netns", layout.netns)
    run("ip", "addr", "add", f"{layout.host_ip}/30", "dev", layout.host_veth)
    run("ip", "link", "set", layout.host_veth, "up")
    inside = ["ip", "netns", "exec", layout.netns]
    run(*inside, "ip", "link", "set", "lo", "up")
    run(*inside, "ip", "addr", "add", f"{layout.node_ip}/30", "dev", "eth0")
    run(*inside, "ip", "link", "set", "eth0", "up")
    run(*inside, "ip", "route", "add", "default", "via", layout.host_ip)
    # a Service's traffic is DNATed by kube-proxy's rules: forwarded between pods, and seen by iptables even when
    # both pods sit on the same bridge
    for setting in ("net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"):
        run(*inside, "sysctl", "-qw", setting)


def remove_network(layout: Layout) -> None:
    """The namespace and its veth pair (the pair goes with the namespace), if a node of this slot left them."""
    with contextlib.suppress(subprocess.CalledProcessError):
        run("ip", "link", "del", layout.host_veth)
    with contextlib.suppress(subprocess.CalledProcessError):
        run("ip", "netns", "del", layout.netns)


# --- cgroups ---------------------------------------------------------------------------------------------------

def hierarchies() -> list[Path]:
    """Every mounted cgroup v1 hierarchy (``cpu``, ``memory``, ``pids``, ``name=systemd``, ...)."""
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, mountpoint, fstype, *_ = line.split()
        if fstype == "cgroup":
            found.append(Path(mountpoint))
    return found


def create_cgroups(layout: Layout) -> None:
    """The node's cgroup and its ``system`` child (the node's daemons) in every hierarchy; a cpuset cgroup gets
    its parent's CPUs and memory nodes, without which nothing can join it."""
    kill_cgroup(layout)
    for hierarchy in hierarchies():
        for path in (layout.cgroup, f"{layout.cgroup}/system"):
            directory = hierarchy / path.lstrip("/")
            directory.mkdir(exist_ok=True)
            for setting in ("cpuset.cpus", "cpuset.mems"):
                if (directory / setting).exists() and not (directory / setting).read_text().strip():
                    (directory / setting).write_text((directory.parent / setting).read_text())


def join_system_cgroup(layout: Layout, argv: list[str]) -> list[str]:
    """``argv`` run in the node's ``system`` cgroup of every hierarchy, so it and whatever it starts (containerd's
    shims) are found and killed with the node."""
    procs = " ".join(str(h / layout.cgroup.lstrip("/") / "system" / "cgroup.procs") for h in hierarchies())
    script = f'for procs in {procs}; do echo $$ > "$procs"; done; exec "$@"'
    return ["sh", "-c", script, "join-cgroup", *argv]


def cgroup_pids(layout: Layout) -> set[int]:
    """Every process in the node's cgroup subtree (by the ``pids`` hierarchy, else any)."""
    trees = [h / layout.cgroup.lstrip("/") for h in hierarchies()]
    trees = [t for t in trees if t.name and t.exists()]
    pids: set[int] = set()
    for tree in [t for t in trees if t.parent.name == "pids"] or trees[:1]:
        for procs in tree.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(pid) for pid in procs.read_text().split())
    return pids


def kill_cgroup(layout: Layout, timeout: float = 20.0) -> None:
    """SIGKILL every process of the node's cgroup until none is left, then remove its cgroups bottom-up."""
    deadline = time.monotonic() + timeout
    while (pids := cgroup_pids(layout)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for hierarchy in hierarchies():
        tree = hierarchy / layout.cgroup.lstrip("/")
        if not tree.exists():
            continue
        for directory in sorted((d for d in tree.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            tree.rmdir()


# --- mounts ----------------------------------------------------------------------------------------------------

def unmount_below(directory: Path) -> None:
    """Detach every mount under ``directory`` (containers' root filesystems, volumes, pods' network namespaces),
    deepest first, so the directory can be removed."""
    prefix = str(directory.resolve()) + "/"
    for _ in range(5):  # a detached mount may uncover another one stacked beneath it
        mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        below = sorted({m for m in mounts if m.startswith(prefix)}, key=len, reverse=True)
        if not below:
            return
        for mountpoint in below:
            with contextlib.suppress(OSError):
                subprocess.run(["umount", "-l", mountpoint], check=False, capture_output=True)


def remove_leftovers(directory: Path) -> None:
    """What a node that died without stopping left in its directory: its mounts, then its files."""
    if directory.is_dir() and directory.name.startswith("pbnode-"):
        unmount_below(directory)
        shutil.rmtree(directory, ignore_errors=True)

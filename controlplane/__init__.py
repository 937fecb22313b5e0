"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager built from their Go modules) on
loopback, for tests, benchmarks and ``poolboy dev --cluster real``; see ``controlplane/README.md``.

``ControlPlane`` and ``User`` load on first use: they bring ``cryptography``, which a devcluster run never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controlplane.binaries import Binaries, ControlPlaneUnavailable, find_binaries

if TYPE_CHECKING:
    from controlplane.cluster import ControlPlane, User

__all__ = ["Binaries", "ControlPlane", "ControlPlaneUnavailable", "User", "find_binaries"]


def __getattr__(name: str) -> Any:
    if name in ("ControlPlane", "User"):
        from controlplane import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module 'controlplane' has no attribute {name!r}")

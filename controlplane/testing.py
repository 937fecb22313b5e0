"""Testing helpers shipped with the control plane (as ``devcluster.testing`` is with devcluster)."""

from controlplane.binaries import ControlPlaneUnavailable, find_binaries
from controlplane.cluster import ControlPlane, User

__all__ = ["ControlPlane", "ControlPlaneUnavailable", "User", "find_binaries"]

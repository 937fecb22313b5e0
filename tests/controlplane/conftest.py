"""One real control plane for these tests (etcd, kube-apiserver, kube-controller-manager), with Poolboy's CRDs and
the fault proxy in front of it; tests use namespaces of their own. It also runs the Deployment and ReplicaSet
controllers, so a Deployment's Pods are created and judged by admission (the chart's, under PodSecurity)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane.cluster import CONTROLLERS, WORKLOAD_CONTROLLERS
from controlplane.testing import ControlPlane
from devcluster.testing import DEFAULT_CRDS


@pytest.fixture(scope="package")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane(crds=[DEFAULT_CRDS], fault_proxy=True,
                      controllers=CONTROLLERS + WORKLOAD_CONTROLLERS) as cluster:
        yield cluster

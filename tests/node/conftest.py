"""One real control plane and one node beside it (kubelet, containerd, kube-proxy, CoreDNS, kube-scheduler), with
the chart installed by ``helm`` into the examples' operator namespace, PodSecurity ``restricted`` enforced there;
the tests of this package share the release and leave it as they found it (every pod Ready). A node needs root
(network namespaces, cgroups, mounts): elsewhere these tests are skipped, and in CI (``POOLBOY_REQUIRE_NODE=1``)
they fail."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from controlplane.testing import ControlPlane
from devcluster.testing import DEFAULT_CRDS
from node.binaries import NodeUnavailable
from node.launcher import CONTROL_PLANE_OPTIONS, Node
from tests.controlplane.helm_release import RESTRICTED, Release
from tests.node.deployed import NAMESPACE, all_ready, node_values
from tests.waiting import wait_for

#: set by .ci/run: a machine that cannot run a node fails instead of skipping these tests
REQUIRED = os.environ.get("POOLBOY_REQUIRE_NODE") == "1"
#: helm's wait for every Deployment to be Available, and the test's own for the pods after it
INSTALL_TIMEOUT = 240


@pytest.fixture(scope="package")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane(crds=[DEFAULT_CRDS], **CONTROL_PLANE_OPTIONS) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def node(control_plane: ControlPlane) -> Iterator[Node]:
    try:
        with Node(control_plane) as started:
            yield started
    except NodeUnavailable as error:
        if REQUIRED:  # CI: a machine that cannot run the node fails the run
            raise
        pytest.skip(f"no node here: {error} (POOLBOY_REQUIRE_NODE=1 fails instead)")


@pytest.fixture(scope="package")
def release(control_plane: ControlPlane, node: Node, tmp_path_factory: pytest.TempPathFactory) -> Release:
    control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE, "labels": RESTRICTED}})
    deployed = Release(control_plane, "poolboy", NAMESPACE, tmp_path_factory.mktemp("release"))
    deployed.install(node_values(node), *wait(INSTALL_TIMEOUT), timeout=INSTALL_TIMEOUT + 30)
    wait_for(lambda: all_ready(control_plane), timeout=60, interval=0.5, message="every pod of the release Ready")
    return deployed


def wait(seconds: int) -> tuple[str, ...]:
    """helm's arguments to wait until every Deployment of the release is Available (rolled out)."""
    return ("--wait", "--timeout", f"{seconds}s")

"""Shared fixtures: a real devcluster subprocess and a real redis-server, each on a free loopback port; the tests
that need the real control plane (marked ``control_plane``: ``tests/controlplane``, and every test of ``tests/e2e``,
``tests/chaos`` and ``tests/corpus`` when they run on it, see :mod:`tests.clusters`) skipped or failed at once where
it cannot run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster.testing import DEFAULT_CRDS, DevCluster
from stack.testing import RedisServer
from tests import clusters

#: the directories whose stacks run on :data:`tests.clusters.E2E_CLUSTER`
ON_E2E_CLUSTER = ("e2e", "chaos", "corpus")
#: the directories that test the real control plane itself
ON_CONTROL_PLANE = ("controlplane",)
_HERE = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "control_plane: needs the real control plane (controlplane/)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(item.path).resolve().relative_to(_HERE).parts
        if parts and (parts[0] in ON_CONTROL_PLANE or (clusters.E2E_CLUSTER == "real" and parts[0] in ON_E2E_CLUSTER)):
            item.add_marker(pytest.mark.control_plane)
    needing = [item for item in items if item.get_closest_marker("control_plane")]
    if not needing or (reason := clusters.unavailable()) is None:
        return
    if clusters.REQUIRED:
        raise pytest.UsageError(f"the real control plane is required (POOLBOY_REQUIRE_CONTROL_PLANE=1): {reason}")
    skip = pytest.mark.skip(reason=f"no real control plane: {reason}")
    for item in needing:
        item.add_marker(skip)
    config.stash[_SKIPPED] = f"{len(needing)} tests skipped: no real control plane here: {reason}"


_SKIPPED = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if _SKIPPED in config.stash:
        terminalreporter.write_line(config.stash[_SKIPPED], yellow=True, bold=True)


@pytest.fixture(scope="session")
def devcluster() -> Iterator[DevCluster]:
    """One devcluster for the session, with Poolboy's CRDs loaded. Tests use their own namespaces."""
    with DevCluster(crds=[DEFAULT_CRDS] if DEFAULT_CRDS.exists() else []) as cluster:
        yield cluster


@pytest.fixture()
def fresh_devcluster() -> Iterator[DevCluster]:
    """A devcluster of the test's own, for tests that change server-wide settings (faults, history size)."""
    with DevCluster(crds=[DEFAULT_CRDS] if DEFAULT_CRDS.exists() else []) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server

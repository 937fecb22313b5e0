"""Shared fixtures: a real devcluster subprocess and a real redis-server, each on a free loopback port; the tests
that need the real control plane (marked ``control_plane``: ``tests/controlplane``, and every test of ``tests/e2e``,
``tests/chaos`` and ``tests/corpus`` when they run on it, see :mod:`tests.clusters`) and those that build and run the
container image (marked ``image``, :mod:`tests.deploy.image`) and those that run an external tool (marked with its
name, :mod:`tests.tools`: ``kubectl``, ``helm``, ``openssl``, ...) skipped with one summary line, or failed at once in
CI, where they cannot run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devcluster.testing import DEFAULT_CRDS, DevCluster
from stack.testing import RedisServer
from tests import clusters, tools
from tests.deploy import image

#: the directories whose stacks run on :data:`tests.clusters.E2E_CLUSTER`
ON_E2E_CLUSTER = ("e2e", "chaos", "corpus")
#: the directories that test the real control plane itself
ON_CONTROL_PLANE = ("controlplane",)
_HERE = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "control_plane: needs the real control plane (controlplane/)")
    config.addinivalue_line("markers", "image: builds and runs the container image (scripts/build-image.sh)")
    for tool in tools.UNAVAILABLE:
        config.addinivalue_line("markers", f"{tool}: runs the external tool {tool} (tests/tools.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(item.path).resolve().relative_to(_HERE).parts
        if parts and (parts[0] in ON_CONTROL_PLANE or (clusters.E2E_CLUSTER == "real" and parts[0] in ON_E2E_CLUSTER)):
            item.add_marker(pytest.mark.control_plane)
            if parts[0] in ON_E2E_CLUSTER:
                item.add_marker(pytest.mark.helm)  # its stack's service accounts get the chart's RBAC, rendered by helm
    _skip_or_fail(config, items, "control_plane", "real control plane", "POOLBOY_REQUIRE_CONTROL_PLANE",
                  clusters.REQUIRED, clusters.unavailable)
    _skip_or_fail(config, items, "image", "container image build", "POOLBOY_REQUIRE_IMAGE", image.REQUIRED,
                  image.unavailable)
    for tool, unavailable in tools.UNAVAILABLE.items():
        _skip_or_fail(config, items, tool, f"{tool} tool", "POOLBOY_REQUIRE_CONTROL_PLANE", clusters.REQUIRED,
                      unavailable)


def _skip_or_fail(config: pytest.Config, items: list[pytest.Item], marker: str, what: str, variable: str,
                  required: bool, unavailable: Callable[[], str | None]) -> None:
    """Where ``what`` cannot run, skip the tests marked ``marker`` with one summary line, or end the run at once
    when CI requires it (``variable=1``): a machine that lacks it must not pass for one that has it."""
    needing = [item for item in items if item.get_closest_marker(marker)]
    if not needing or (reason := unavailable()) is None:
        return
    if required:
        raise pytest.UsageError(f"the {what} is required ({variable}=1): {reason}")
    skip = pytest.mark.skip(reason=f"no {what}: {reason}")
    for item in needing:
        item.add_marker(skip)
    config.stash.setdefault(_SKIPPED, []).append(f"{len(needing)} tests skipped: no {what} here: {reason}")


_SKIPPED = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for line in config.stash.get(_SKIPPED, []):
        terminalreporter.write_line(line, yellow=True, bold=True)


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

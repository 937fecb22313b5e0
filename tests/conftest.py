"""Shared fixtures: a real devcluster subprocess and a real redis-server, each on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devcluster.testing import DEFAULT_CRDS, DevCluster
from stack.testing import RedisServer


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

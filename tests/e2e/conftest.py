"""End-to-end fixtures: the whole stack as ``poolboy dev`` starts it (devcluster, Redis, watcher, workers, beat)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from procutil import free_port
from stack.local import LocalStack
from tests.clusters import e2e_options

#: short periodic intervals so deadline- and sweep-driven behaviour shows within a test's patience
FAST_INTERVALS = {
    "POOLBOY_MANAGE_CLAIMS_INTERVAL": "5",
    "POOLBOY_MANAGE_HANDLES_INTERVAL": "5",
    "POOLBOY_TIME_DEPENDENT_INTERVAL": "5",
    "POOLBOY_MANAGE_POOLS_INTERVAL": "3",
    "POOLBOY_RESYNC_INTERVAL": "60",
    "POOLBOY_PERMANENT_ERROR_RECHECK": "10",
    # a worker SIGKILLed with a prefetched message leaves its key marked queued; re-publish it soon
    "POOLBOY_WORKQUEUE_STALE_SECONDS": "10",
}


def free_port_pair() -> int:
    """A free port whose successor is free too: the watcher serves metrics on it, worker 0 on the next one."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two consecutive free ports")


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=1, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        yield running

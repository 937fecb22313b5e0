"""End-to-end fixtures: the whole stack as ``poolboy dev`` starts it (devcluster, Redis, watcher, workers, beat)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=1, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        yield running

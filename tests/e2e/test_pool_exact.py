"""A pool refilled while claims take its handles, through creates whose answers are lost, a FLUSHALL of Redis, a
SIGKILLed worker and a watcher away for a few seconds, ends with exactly ``minAvailable`` unbound handles and stays
there (docs/behaviour.md#pools).

The API server stores a share of the ResourceHandle creates and answers them with a 500 or a 503 ("commit then
fail", ``after_commit``: devcluster injects it, on the real control plane its fault proxy), so the run that made
such a handle never hears of it and the read cache has it only once the watch delivers it; while the watcher is away
the cache is trusted and nobody brings it up to date, so every refill in that time runs on a count that lags.
"Settled" is the pool's own word for it: every claim is bound, every unbound handle is ready, and the pool's status
counts as many handles as the API server lists (its last run saw them all), so a pool that made too many settles
too, and fails the count. The window afterwards spans several of the pool's periodic runs
(``POOLBOY_MANAGE_POOLS_INTERVAL``).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest
import redis

from stack.local import LocalStack
from tests.chaos.test_chaos import CHAOS_ENV
from tests.clusters import e2e_options
from tests.e2e.burst import NS, Burst, D, custom_api
from tests.waiting import wait_for

POOL = 15
CLAIMS = 2 * POOL
WORKERS = 2
#: the share of ResourceHandle creates stored and answered with an error while the claims arrive
LOST_ANSWERS = 0.3
#: how long the watcher is away (below ``cache_alive_seconds``, 15 s: the read cache stays trusted meanwhile)
WATCHER_AWAY = 5.0
#: four periodic pool runs (``POOLBOY_MANAGE_POOLS_INTERVAL`` is 3 s) and a resync (10 s) after the pool settled
WINDOW = 15.0

#: above the test's own deadlines (fill 60 s, claims 60 s, bound 120 s, settled 60 s, the window) and the stack's start
pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    # the SIGKILLed worker may hold the pool's message: its key stays marked queued until the sweep re-publishes a
    # mark this old, as after a pod kill; at the default (60 s) that alone would outlast the settle deadline
    env = {**CHAOS_ENV, "POOLBOY_WORKQUEUE_STALE_SECONDS": "10"}
    options = e2e_options(api_faults=True, workers=WORKERS, concurrency=2, env=env)
    with LocalStack(options) as running:
        yield running


def settled(burst: Burst) -> int | None:
    """The unbound handle count once the pool has settled (see the module docstring), else None."""
    if not burst.all_bound(CLAIMS):
        return None
    handles = burst.unbound_pool()
    if not all((h.get("status") or {}).get("ready") is True for h in handles):
        return None
    pool = burst.api.get_namespaced_custom_object(D, "v1", NS, "resourcepools", burst.name)
    counted = ((pool.get("status") or {}).get("resourceHandleCount") or {}).get("available")
    return len(handles) if handles and counted == len(handles) else None


def claim_while_refilling(burst: Burst, stack: LocalStack, first: int, done: list[str]) -> None:
    """Claims ``first`` to ``first + POOL`` at a few a second; a FLUSHALL a third of the way in, a worker SIGKILLed
    two thirds in."""
    for index in range(first, first + POOL):
        burst.claim(index)
        if index == first + POOL // 3:
            client = redis.Redis.from_url(stack.redis_url)
            client.flushall()
            client.close()
            done.append(f"FLUSHALL after claim {index}")
        elif index == first + 2 * POOL // 3:
            stack.restart(f"worker-{index % WORKERS}", sig=signal.SIGKILL)
            done.append(f"SIGKILL worker-{index % WORKERS} after claim {index}")
        time.sleep(0.2)


def claim_with_the_watcher_away(burst: Burst, stack: LocalStack, first: int, done: list[str]) -> None:
    """Claims ``first`` to ``first + POOL`` at once; once one is bound (the watcher has passed them on), the watcher
    SIGKILLed and away for :data:`WATCHER_AWAY` seconds, as a pod rescheduled: the claims bind and the pool refills
    on a read cache nobody updates (it stays trusted for ``cache_alive_seconds``)."""
    for index in range(first, first + POOL):
        burst.claim(index)
    names = {f"c{index:03d}" for index in range(first, first + POOL)}
    wait_for(lambda: any((c.get("status") or {}).get("resourceHandle") for c in burst.claims()
                         if c["metadata"]["name"] in names), timeout=30, interval=0.1, message="a claim bound")
    watcher = stack.child("watcher")
    watcher.signal(signal.SIGKILL)
    time.sleep(WATCHER_AWAY)
    stack.restart("watcher", sig=signal.SIGKILL)
    done.append(f"watcher away {WATCHER_AWAY}s after claim {first + POOL - 1}")


def test_the_pool_ends_and_stays_at_exactly_min_available(stack: LocalStack) -> None:
    burst = Burst(custom_api(stack), "exact", "exact", POOL)
    burst.setup()
    wait_for(lambda: burst.unbound_pool_handles() == POOL, timeout=60, interval=0.5, message="pool filled")
    assert stack.cluster is not None
    stack.cluster.set_faults(error_rate=LOST_ANSWERS, codes=[500, 503], verbs=["create"],
                             kinds=["resourcehandles"], after_commit=True)
    done: list[str] = []
    try:
        claim_while_refilling(burst, stack, 0, done)
        claim_with_the_watcher_away(burst, stack, POOL, done)
    finally:
        stack.cluster.clear_faults()

    wait_for(lambda: burst.all_bound(CLAIMS), timeout=120, interval=1.0,
             message=f"every claim bound ({done})\n{stack.logs()}")
    count = wait_for(lambda: settled(burst), timeout=60, interval=1.0,
                     message=f"the pool settled ({done}; unbound: {burst.unbound_pool_handles()})")
    assert count == POOL, f"{count} unbound handles, not minAvailable {POOL} ({done})"
    deadline = time.monotonic() + WINDOW
    while time.monotonic() < deadline:
        assert burst.unbound_pool_handles() == POOL, f"the pool left minAvailable after settling ({done})"
        time.sleep(0.5)

"""Rolling restart of every component during a burst: nothing is lost.

The watcher, each worker and beat are stopped with SIGTERM (as Kubernetes does in a rollout) and started again,
one after the other, while claims are being created. Workers hand running reconciles back when their grace period
ends; the watcher re-lists on start; beat's schedule is in Redis. Every claim ends bound, the pool is refilled,
and the binding invariants hold on every watch event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.burst import Burst, Watchdog, custom_api, wait_settled
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

POOL = 30
CLAIMS = 80
WORKERS = 2


@pytest.fixture(scope="module")
def rolling_stack() -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_WORKER_SHUTDOWN_GRACE": "3"}
    with LocalStack(e2e_options(workers=WORKERS, concurrency=2, env=env)) as stack:
        yield stack


@pytest.mark.slow
def test_rolling_restart_of_every_component_during_a_burst_loses_nothing(rolling_stack: LocalStack) -> None:
    stack = rolling_stack
    burst = Burst(custom_api(stack), "rolling", "rolling", POOL)
    burst.setup()
    wait_for(lambda: burst.unbound_pool_handles() >= POOL, timeout=120, interval=0.5, message="pool filled")
    watchdog = Watchdog(burst).start()
    creator = threading.Thread(target=lambda: [burst.claim(i) for i in range(CLAIMS)])
    began = time.monotonic()
    creator.start()
    for name in ["watcher", *(f"worker-{i}" for i in range(WORKERS)), "beat"]:
        stack.restart(name)
        wait_for(lambda: stack.workers_answering() >= WORKERS, timeout=60, interval=0.5,
                 message=f"every worker answering after restarting {name}")
    creator.join(120)
    wait_for(lambda: burst.all_bound(CLAIMS), timeout=240, interval=0.5,
             message=f"every claim bound after the rolling restart\n{stack.logs()}")
    bound = time.monotonic() - began
    wait_for(lambda: burst.unbound_pool_handles() == POOL, timeout=120, interval=0.5,
             message="pool refilled to exactly minAvailable")
    violations = watchdog.stop()
    handed_back = sum(stack.child(f"worker-{i}").tail(10**7).count("handing the key back") for i in range(WORKERS))
    print(f"\nrolling restart: all {CLAIMS} claims bound {bound:.1f}s after the burst began; {handed_back} "
          f"reconciles handed back by stopping workers; {watchdog.events} watch events checked")
    assert not violations, violations
    wait_settled(burst, log_dir=stack.log_dir, redis_url=stack.redis_url)

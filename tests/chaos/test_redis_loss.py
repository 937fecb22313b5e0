"""Repeated Redis loss under load: redis-server killed and restarted on its port 20 times during a
burst of claims with 2 workers. Afterwards every component is the process it was (no exit, no restart), every worker
answers a ping and binds a new claim, every claim is bound, and nothing leaked (no handle bound twice, no claim with
two handles, no handle without its claim or its resources, the pool back at exactly minAvailable).

Each restart comes back empty (no persistence), as a Redis pod rescheduled without a volume: the work queue, the queues
and the delaying queue are lost every time, and recovery relies on the resync and the sweeps (``CHAOS_ENV``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from stack.local import LocalStack
from tests.chaos.test_chaos import CHAOS_ENV, seeded_burst
from tests.clusters import e2e_options
from tests.e2e.burst import Watchdog, wait_settled
from tests.waiting import wait_for

POOL = 20
CLAIMS = 40
WORKERS = 2
RESTARTS = 20

#: above the sum of the test's own deadlines (60 + 30 + 90 + 30 + 60 s and the stack's start), so a failure is one
#: of them, explained, not pytest's kill
pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=WORKERS, concurrency=2, env=dict(CHAOS_ENV))) as running:
        yield running


def restart_redis(stack: LocalStack, down: float) -> None:
    """SIGKILL redis-server and start it again on the same port after ``down`` seconds."""
    server = stack.redis
    assert server is not None and server.process is not None
    server.process.kill()
    server.process.wait(10)
    time.sleep(down)
    server.start()


def test_workers_survive_repeated_redis_loss_during_a_burst(stack: LocalStack) -> None:
    rng, burst = seeded_burst(stack, "redisloss", POOL, timeout=60)
    pids = {child.name: child.process.pid for child in stack.children if child.process is not None}
    watchdog = Watchdog(burst).start()

    creator = threading.Thread(target=lambda: [(burst.claim(i), time.sleep(0.5)) for i in range(CLAIMS)])
    began = time.monotonic()
    creator.start()
    for _ in range(RESTARTS):
        restart_redis(stack, down=rng.uniform(0.2, 1.2))
        time.sleep(rng.uniform(0.5, 2.0))
    creator.join(60)
    calm = time.monotonic()

    dead = {c.name: c.tail(4000) for c in stack.children if not c.alive or c.process.pid != pids[c.name]}
    assert not dead, f"components exited during the Redis restarts: {dead}"
    wait_for(lambda: stack.workers_answering() == WORKERS, timeout=30, interval=0.5,
             message=f"both workers answer a ping\n{stack.logs()}")
    wait_for(lambda: burst.all_bound(CLAIMS), timeout=90, interval=1.0,
             message=f"every claim bound after the Redis restarts\n{stack.logs()}")
    bound = time.monotonic() - calm
    burst.claim(CLAIMS)  # a claim made after the chaos binds too: the workers consume
    wait_for(lambda: burst.all_bound(CLAIMS + 1), timeout=30, interval=0.5, message="a new claim binds")
    wait_for(lambda: burst.unbound_pool_handles() == POOL, timeout=60, interval=1.0,
             message="pool back at exactly minAvailable")
    wait_settled(burst, log_dir=stack.log_dir, redis_url=stack.redis_url)
    handles = [h for h in burst.handles() if not h["metadata"].get("deletionTimestamp")]
    assert len(handles) == CLAIMS + 1 + POOL, "a handle without its claim (or a claim's handle missing)"
    violations = watchdog.stop()
    assert not violations, violations
    assert not any("Unrecoverable error" in c.tail(10**7) for c in stack.children)
    print(f"redis-loss figures: {RESTARTS} restarts in {calm - began:.1f}s; every claim bound {bound:.1f}s after "
          f"the last restart")

"""Chaos on the whole stack, bounded to a few minutes of wall time, with the operator's default intervals.

4 worker processes, a burst of 300 claims against a pool of 150, and during it, in a random order (the seed is
printed): SIGKILLs of worker main processes and of pool children, of the watcher and of beat (each restarted as a
Deployment would), a FLUSHALL of the full Redis, and a kill and restart of redis-server (empty: no persistence);
devcluster answers 10 % of API requests with 500, 429 (Retry-After) or 409, with added latency.

Checked continuously from watches: no handle bound to two claims, no claim with two handles, and, when an object
disappears, that its cleanup was done before its finalizer went. Checked at the end: every claim bound, the pool
back at exactly minAvailable, no managed resource without a live handle, no handle without its resources; then
deleting every claim removes its handles and resources. Printed: convergence time after the chaos stops, runs
reaped by the lease sweep, transient-error retries, Events that could not be written.

Nothing here shortens the sweeps or the resync: the watcher's re-list after a Redis loss, the workers' release of
due retries and the lease reaper are what bring every object back, as in a cluster with the defaults.
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.burst import Burst, Watchdog, custom_api, wait_settled
from tests.waiting import wait_for

POOL = 150
CLAIMS = 300
WORKERS = 4
#: the defaults, but for how soon a SIGKILLed watcher's or beat's standby would take over (each is restarted at once)
CHAOS_ENV = {
    "POOLBOY_BEAT_LOCK_TIMEOUT": "5",
    "POOLBOY_WATCHER_LEASE_SECONDS": "6",
}

#: above the sum of the test's own deadlines (fill 120 s, bind 150 s, refill 90 s, cleanup 150 s, the stack's start),
#: so a failure is one of them, explained, not pytest's kill
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def chaos_stack() -> Iterator[LocalStack]:
    options = e2e_options(api_faults=True, workers=WORKERS, concurrency=1, env=dict(CHAOS_ENV))
    with LocalStack(options) as stack:
        yield stack


class Chaos:
    """The disruptions, each of which a real cluster sees: pods killed, Redis flushed or restarted."""

    def __init__(self, stack: LocalStack, rng: random.Random) -> None:
        self.stack, self.rng = stack, rng
        self.done: list[str] = []

    def kill_worker_main(self) -> None:
        name = f"worker-{self.rng.randrange(WORKERS)}"
        process = self.stack.child(name).process
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)  # its pool children follow (PDEATHSIG)
        self.stack.restart(name, sig=signal.SIGKILL)
        self.done.append(f"SIGKILL {name} main")

    def kill_worker_child(self) -> None:
        name = f"worker-{self.rng.randrange(WORKERS)}"
        process = self.stack.child(name).process
        assert process is not None
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        pids = [int(p) for p in children.read_text().split()] if children.exists() else []
        if not pids:  # the threads pool (the default) runs its reconciles in the worker process itself
            self.kill_worker_main()
            return
        os.kill(self.rng.choice(pids), signal.SIGKILL)
        self.done.append(f"SIGKILL {name} pool child")

    def kill(self, name: str) -> Callable[[], None]:
        def action() -> None:
            self.stack.restart(name, sig=signal.SIGKILL)
            self.done.append(f"SIGKILL {name}")

        return action

    def flushall(self) -> None:
        client = redis.Redis.from_url(self.stack.redis_url)
        keys = client.dbsize()
        client.flushall()
        self.done.append(f"FLUSHALL ({keys} keys)")

    def restart_redis(self) -> None:
        server = self.stack.redis
        assert server is not None and server.process is not None
        server.process.kill()
        server.process.wait(10)
        time.sleep(1.0)  # Redis is away for a moment, as when its pod is rescheduled
        server.start()
        self.done.append("kill + restart redis-server")

    def plan(self) -> list[Callable[[], None]]:
        actions = [self.kill_worker_main, self.kill_worker_main, self.kill_worker_child, self.kill_worker_child,
                   self.kill_worker_child, self.kill("watcher"), self.kill("beat"), self.flushall,
                   self.restart_redis]
        self.rng.shuffle(actions)
        return actions


def count_in_logs(stack: LocalStack, text: str) -> int:
    return sum(path.read_text(errors="replace").count(text) for path in Path(stack.log_dir).glob("worker-*.log"))


def seeded_burst(stack: LocalStack, name: str, pool: int, timeout: float) -> tuple[random.Random, Burst]:
    """The run's random order (``CHAOS_SEED`` repeats it, printed) and a burst whose pool of ``pool`` is full."""
    seed = int(os.environ.get("CHAOS_SEED") or random.randrange(1 << 30))
    print(f"\n{name} seed {seed} (CHAOS_SEED={seed} repeats this order)")
    burst = Burst(custom_api(stack), name, name, pool)
    burst.setup()
    wait_for(lambda: burst.unbound_pool_handles() >= pool, timeout=timeout, interval=0.5, message="pool filled")
    return random.Random(seed), burst


def test_chaos_during_a_burst_breaks_no_invariant_and_converges(chaos_stack: LocalStack) -> None:
    stack = chaos_stack
    rng, burst = seeded_burst(stack, "chaos", POOL, timeout=120)
    watchdog = Watchdog(burst).start()
    assert stack.cluster is not None
    stack.cluster.set_faults(error_rate=0.1, codes=[500, 429, 409], retry_after=1, latency_ms=5)

    chaos = Chaos(stack, rng)
    creator = threading.Thread(target=lambda: [burst.claim(i) for i in range(CLAIMS)])
    began = time.monotonic()
    creator.start()
    for action in chaos.plan():
        time.sleep(rng.uniform(1.0, 3.0))
        action()
    creator.join(120)
    stack.cluster.clear_faults()
    calm = time.monotonic()
    calm_epoch = time.time()

    wait_for(lambda: burst.all_bound(CLAIMS), timeout=150, interval=1.0,
             message=f"every claim bound after the chaos ({chaos.done})\n{stack.logs()}")
    bound = time.monotonic() - calm
    during = burst.bind_seconds(created_before=calm_epoch)
    try:
        wait_for(lambda: burst.unbound_pool_handles() == POOL, timeout=90, interval=1.0,
                 message="pool back at exactly minAvailable")
    except AssertionError as error:
        raise AssertionError(f"{error} (unbound pool handles: {burst.unbound_pool_handles()})\n{stack.logs()}") \
            from None
    converged = time.monotonic() - calm
    wait_settled(burst, log_dir=stack.log_dir, redis_url=stack.redis_url, context=f"chaos: {chaos.done}\n")

    for claim in burst.claims():
        burst.api.delete_namespaced_custom_object("poolboy.gpte.redhat.com", "v1", burst.namespace,
                                                  "resourceclaims", claim["metadata"]["name"])
    wait_for(lambda: not burst.claims() and len(burst.handles()) == POOL and len(burst.config_maps()) == POOL,
             timeout=150, interval=1.0, message="every claim's handle and resources deleted")
    deleted = time.monotonic() - calm - converged
    violations = watchdog.stop()
    wait_settled(burst, log_dir=stack.log_dir, redis_url=stack.redis_url, context=f"chaos: {chaos.done}\n")
    print(f"chaos: {'; '.join(chaos.done)}\n"
          f"chaos figures: burst + chaos {calm - began:.1f}s; after the chaos stopped every claim bound in "
          f"{bound:.1f}s and the pool back at minAvailable in {converged:.1f}s; deleting {CLAIMS} claims took "
          f"{deleted:.1f}s; bind p50/p90 of the {len(during)} claims created during the chaos "
          f"{statistics.median(during):.0f}s/{statistics.quantiles(during, n=10)[-1]:.0f}s; "
          f"runs reaped {count_in_logs(stack, 'lease expired without DONE')}; transient-error "
          f"retries {count_in_logs(stack, 'transient')}; Events dropped {count_in_logs(stack, 'could not emit event')}"
          f"; {watchdog.events} watch events checked")
    assert not violations, violations

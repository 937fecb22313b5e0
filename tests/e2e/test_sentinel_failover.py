"""Redis high availability with Sentinel: the whole stack on ``sentinel://`` URLs — broker, work
work queue, delaying queue, own-writes records and beat's lock all reach the master through three sentinels — while the
primary is SIGKILLed in the middle of a burst of claims.

The sentinels promote the replica; every component finds the new master through the factory in
``engine/redis_client.py`` (the broker and beat through ``workers/broker.py``); no handle is bound twice and no claim
gets two handles (checked on every watch event); binding resumes after the failover (the figure is printed, not
asserted) and every claim ends bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from stack.local import LocalStack
from stack.testing import SentinelCluster
from tests.clusters import e2e_options
from tests.e2e.burst import Burst, Watchdog, custom_api, wait_settled
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

pytestmark = pytest.mark.redis_sentinel

POOL = 30
CLAIMS = 60
KILL_AT = 20


@pytest.fixture(scope="module")
def ha() -> Iterator[SentinelCluster]:
    with SentinelCluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def sentinel_stack(ha: SentinelCluster) -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_REDIS_SENTINEL_MASTER": ha.master, "POOLBOY_BEAT_LOCK_TIMEOUT": "10"}
    with LocalStack(e2e_options(workers=2, concurrency=2, redis_url=ha.url, env=env)) as stack:
        yield stack


@pytest.mark.slow
def test_primary_killed_during_a_burst_fails_over_and_binding_resumes(ha: SentinelCluster,
                                                                      sentinel_stack: LocalStack) -> None:
    burst = Burst(custom_api(sentinel_stack), "ha", "ha", POOL)
    burst.setup()
    wait_for(lambda: burst.unbound_pool_handles() >= POOL, timeout=120, interval=0.5, message="pool filled")
    watchdog = Watchdog(burst).start()
    old_master = ha.master_address()
    killed_at: list[float] = []

    def create_claims() -> None:
        for index in range(CLAIMS):
            if index == KILL_AT:
                assert ha.primary.process is not None
                ha.primary.process.kill()
                killed_at.append(time.monotonic())
            burst.claim(index)

    creator = threading.Thread(target=create_claims)
    creator.start()
    wait_for(lambda: killed_at, timeout=60, message="primary killed")
    new_master = wait_for(lambda: (a := ha.master_address()) != old_master and a, timeout=60, interval=0.1,
                          message="the sentinels promoting the replica")
    failover = time.monotonic() - killed_at[0]
    assert new_master == ("127.0.0.1", ha.replica.port)
    bound_after_failover = burst.bound_count()
    wait_for(lambda: burst.bound_count() > bound_after_failover, timeout=120, interval=0.2,
             message="a claim bound after the failover")
    resumed = time.monotonic() - killed_at[0]
    creator.join(60)
    wait_for(lambda: burst.all_bound(CLAIMS), timeout=240, interval=0.5,
             message=f"every claim bound after the failover\n{sentinel_stack.logs()}")
    all_bound = time.monotonic() - killed_at[0]
    wait_for(lambda: burst.unbound_pool_handles() >= POOL, timeout=120, interval=0.5, message="pool refilled")
    violations = watchdog.stop()
    assert "Acquired lock" in sentinel_stack.child("beat").tail(10**7), "beat never took its lock through Sentinel"
    print(f"\nsentinel failover: new master {failover:.1f}s after SIGKILL of the primary; binding resumed after "
          f"{resumed:.1f}s; all {CLAIMS} claims bound after {all_bound:.1f}s; {watchdog.events} watch events checked")
    assert not violations, violations
    wait_settled(burst, log_dir=sentinel_stack.log_dir)

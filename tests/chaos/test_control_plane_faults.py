"""Faults of the real control plane during a burst: kube-apiserver killed once and started again, and etcd compacted
before it comes back, so that a watch (the watcher's informers and the test's own) that resumes from its
resourceVersion meets a real 410 Gone and lists again. Nothing is lost, no handle is bound twice, and everything
converges within 10 s of the API answering again."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest
import urllib3
from kubernetes import client

from controlplane.testing import ControlPlane
from stack.local import LocalStack
from tests.clusters import E2E_CLUSTER, e2e_options
from tests.e2e.burst import Burst, Watchdog, custom_api, wait_settled
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

POOL = 40
CLAIMS = 80
#: the promise: converged this long after the API server answers again
CONVERGED_WITHIN = 10.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(E2E_CLUSTER != "real", reason="restarts and compacts the real control plane")]


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(cluster="real", workers=2, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        yield running


def claim_through_outage(burst: Burst, index: int, patience: float = 60.0) -> None:
    """Create a claim as a user would while the API server is down: again, until it answers."""
    deadline = time.monotonic() + patience
    while True:
        try:
            burst.claim(index)  # retries the API's own errors; an AlreadyExists after a lost answer is success
            return
        except (urllib3.exceptions.HTTPError, client.ApiException):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_an_api_server_restart_and_a_compaction_lose_nothing_and_converge(stack: LocalStack) -> None:
    cluster = stack.cluster
    assert isinstance(cluster, ControlPlane)
    burst = Burst(custom_api(stack), "apifault", "apifault", POOL)
    burst.setup()
    wait_for(lambda: burst.unbound_pool_handles() >= POOL, timeout=120, interval=0.5, message="pool filled")
    watchdog = Watchdog(burst).start()

    creator = threading.Thread(target=lambda: [claim_through_outage(burst, i) for i in range(CLAIMS)])
    creator.start()
    wait_for(lambda: burst.bound_count() >= CLAIMS // 4, timeout=60, interval=0.2, message="the burst under way")
    assert cluster.apiserver is not None and cluster.apiserver.process is not None
    cluster.apiserver.signal(signal.SIGKILL)  # mid-burst, a crash: every watch and request of the stack breaks
    cluster.apiserver.process.wait(10)
    revision = cluster.compact_etcd()  # every resourceVersion the watches hold is now compacted away
    cluster.start_apiserver()  # returns once /readyz answers
    back = time.monotonic()
    creator.join(120)
    assert not creator.is_alive()

    wait_for(lambda: burst.all_bound(CLAIMS) and burst.unbound_pool_handles() == POOL, timeout=CONVERGED_WITHIN,
             interval=0.2, message=f"every claim bound and the pool refilled within {CONVERGED_WITHIN} s of the API "
                                   f"answering again\n{stack.logs()}")
    converged = time.monotonic() - back
    wait_settled(burst, log_dir=stack.log_dir, redis_url=stack.redis_url, context="api server restart: ")
    violations = watchdog.stop()
    # a watch that resumes from its resourceVersion meets the 410; one broken by another refusal re-lists instead
    gone = stack.child("watcher").output().count("too old (410), re-listing")
    print(f"api server restart with etcd compacted at revision {revision}: converged {converged:.1f}s after the API "
          f"answered again; {gone} informers met 410 Gone and re-listed")
    assert not violations, violations

"""The engine end to end: real redis-server, real ``poolboy worker`` / ``poolboy beat`` subprocesses, trivial
instrumented reconcilers (``engine_reconcilers``). Assertions are on run logs and Redis state, waited for with
deadlines; "nothing more will run" is asserted by the work queue and the Celery queues being idle, never by sleeping.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import signal
import time
from collections.abc import Iterator

import pytest
import redis

from stack.testing import BeatProcess, WorkerProcess
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, LEASE, RECONCILERS
from tests.waiting import wait_for
from workqueue import keyspace, ratelimit

pytestmark = pytest.mark.slow

@pytest.fixture()
def stack(redis_server, r) -> Iterator[WorkerProcess]:
    """One worker (prefork, 2 processes) consuming every queue, plus beat."""
    with WorkerProcess(redis_server.url, ["claims", "handles", "pools", "periodic"], 2, reconcilers=RECONCILERS,
                       env=ENV) as worker, \
            BeatProcess(redis_server.url, env=ENV):
        yield worker


def settle(r: redis.Redis, timeout: float = 20.0) -> None:
    wait_for(lambda: er.idle(r), timeout, message="work queue and Celery queues idle")


def test_burst_before_run_coalesces(stack, r, enqueuer):
    key = "claim/burst/a"
    r.hset(f"behave:{key}", "sleep", "0.5")
    outcomes = [enqueuer.add(key) for _ in range(100)]
    assert outcomes.count("published") == 1
    wait_for(lambda: er.completed(r, key) >= 1, 15, message="first run")
    settle(r)
    assert 1 <= len(er.starts(r, key)) <= 2


def test_event_during_run_gives_exactly_one_more_run(stack, r, enqueuer):
    key = "claim/during/a"
    r.hset(f"behave:{key}", "sleep_first", "1.0")
    assert enqueuer.add(key) == "published"
    wait_for(lambda: er.starts(r, key), 15, message="run started")
    outcomes = [enqueuer.add(key) for _ in range(20)]
    assert "published" not in outcomes
    assert er.completed(r, key) == 0, "the events must have arrived during the run"
    settle(r)
    assert len(er.starts(r, key)) == 2


def test_due_deadline_fires_on_time(stack, r, enqueuer):
    key = "claim/due/a"
    r.hset(f"behave:{key}", "requeue_in_once", "2")
    enqueuer.add(key)
    wait_for(lambda: len(er.starts(r, key)) >= 2, 15, message="the requeued run")
    requested = float(r.get(f"requested:{key}"))
    second = er.starts(r, key)[1]
    assert requested - 0.05 <= second <= requested + 2.0, (second - requested)


def test_permanent_error_is_rechecked_slowly(stack, r, enqueuer):
    key = "claim/permanent/a"
    r.hset(f"behave:{key}", mapping={"raise": "permanent", "recheck_after": "2"})
    enqueuer.add(key)
    wait_for(lambda: len(er.starts(r, key)) >= 3, 20, message="two re-checks")
    times = er.starts(r, key)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap >= 1.9 for gap in gaps), gaps  # the re-check interval, not a hot loop


#: how much later than its backoff a failed run's retry may be put in the delaying queue: the run's end is recorded
#: before the failure count's and the run's last round trips
SCHEDULING_SLACK = 0.5


def retry_scheduled_after(r: redis.Redis, key: str, previous: float | None) -> tuple[float, int, float] | None:
    """(when the key's retry is due, its failures in a row, when its last run ended) once a retry other than
    ``previous`` is due, read in one transaction so that the three belong to the same failure."""
    pipe = r.pipeline(transaction=True)
    pipe.zscore(keyspace.DUE, key)
    pipe.get(keyspace.failures(key))
    pipe.lrange(f"runs:{key}", -1, -1)
    due, failures, last = pipe.execute()
    if due is None or due == previous or not last:
        return None
    return float(due), int(failures), json.loads(last[0])["t"]


def test_transient_error_retried_with_backoff(redis_server, r, enqueuer):
    """Each failure in a row puts the key's retry in the delaying queue within full jitter's doubling bound (uniform
    up to 2^(n-1) s for the n-th), so later retries wait far longer than the first may; a success forgets the count.
    The API-fault cap is raised so that the bound doubles through every failure here, and a retry due later than
    half a second is brought forward once read, so that the test does not sit the backoff out."""
    key, failures = "claim/transient/a", 8
    r.hset(f"behave:{key}", mapping={"raise": "transient", "fail_times": str(failures)})
    env = {**ENV, "POOLBOY_RETRY_BACKOFF_API_MAX": "300"}
    delays: list[float] = []
    with WorkerProcess(redis_server.url, ["claims"], 1, reconcilers=RECONCILERS, env=env, pool="threads"):
        enqueuer.add(key)
        previous: float | None = None
        for failure in range(1, failures + 1):
            due, counted, ended = wait_for(functools.partial(retry_scheduled_after, r, key, previous), 15,
                                           message=f"the retry after failure {failure}")
            assert counted == failure, "the failure count goes on from retry to retry"
            delays.append(due - ended)
            previous = due
            if due - time.time() > 0.5:
                previous = time.time()
                r.zadd(keyspace.DUE, {key: previous}, xx=True)
        wait_for(lambda: er.completed(r, key) > failures, 15, message="the retry that succeeds")
        settle(r)
    bounds = [2.0 ** (n - 1) for n in range(1, failures + 1)]
    assert all(ratelimit.FLOOR <= delay <= bound + SCHEDULING_SLACK for delay, bound in zip(delays, bounds,
                                                                                          strict=True)), delays
    assert max(delays[4:]) > bounds[0] + SCHEDULING_SLACK, f"the backoff does not grow: {delays}"
    assert not r.exists(keyspace.failures(key)), "success resets the per-key failure count"


def queued_messages(r: redis.Redis, queue: str) -> int:
    """Messages waiting on ``queue``, over all of its priority lists."""
    return sum(r.llen(name) for name in r.scan_iter(match=f"{queue}*", _type="list"))


def ran_and_released(r: redis.Redis, key: str, runs: int) -> bool:
    """``key`` ran ``runs`` times and its last run's end (the wake, then DONE) is done."""
    return er.completed(r, key) >= runs and not r.exists(keyspace.active(key))


def test_result_wake_goes_through_the_work_queue(redis_server, r, enqueuer):
    """A key a run wakes is ADDed like any other: marked owed, with one message however often it is woken (a second
    wake coalesces into the first). Only handles are consumed at first, so the woken claim's message waits."""
    key, woken = "handle/e/a", "claim/e/b"
    r.hset(f"behave:{key}", "enqueue", woken)
    with WorkerProcess(redis_server.url, ["handles"], 1, reconcilers=RECONCILERS, env=ENV, pool="threads"):
        for run in (1, 2):
            enqueuer.add(key)
            wait_for(functools.partial(ran_and_released, r, key, run), 15, message=f"waking run {run} released its key")
    assert r.exists(keyspace.pending(woken)), "the woken key is marked owed"
    assert queued_messages(r, "claims") == 1, "the second wake coalesced into the first one's message"
    with WorkerProcess(redis_server.url, ["claims"], 1, reconcilers=RECONCILERS, env=ENV, pool="threads"):
        wait_for(lambda: er.completed(r, woken) >= 1, 15, message="the woken key ran")
        settle(r)
    assert len(er.starts(r, woken)) == 1


def test_no_overlap_and_liveness_two_workers(redis_server, r, enqueuer):
    keys = [f"claim/many/k{i}" for i in range(12)]
    for key in keys:
        r.hset(f"behave:{key}", "sleep_range", "0.02,0.15")
    last_event: dict[str, float] = {}
    with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV), \
            WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV):
        deadline = time.monotonic() + 3.0
        events = 0
        while time.monotonic() < deadline:
            key = random.choice(keys)
            last_event[key] = time.time()
            enqueuer.add(key)
            events += 1
            time.sleep(random.uniform(0, 0.01))
        settle(r, 30)
    total = 0
    for key in keys:
        entries = er.runs(r, key)
        assert not er.overlaps(entries), (key, er.overlaps(entries))
        key_starts = [x["t"] for x in entries if x["e"] == "start"]
        total += len(key_starts)
        if key in last_event:
            assert max(key_starts) >= last_event[key], f"{key}: no run started after its last event"
    assert total < events, (total, events)  # coalescing happened


def test_sigkill_of_pool_child_mid_run(redis_server, r, enqueuer):
    key = "claim/kill/child"
    r.hset(f"behave:{key}", "sleep_first", "30")
    with WorkerProcess(redis_server.url, ["claims", "periodic"], 2, reconcilers=RECONCILERS, env=ENV) as worker, \
            BeatProcess(redis_server.url, env=ENV):
        enqueuer.add(key)
        first = wait_for(lambda: er.runs(r, key), 15, message="first run")[0]
        assert first["pid"] in worker.pool_pids()
        os.kill(first["pid"], signal.SIGKILL)
        wait_for(lambda: er.completed(r, key) >= 1, 4 * LEASE + 10, message="the key ran again")
        settle(r)
    # the worker-lost re-send and the lease reaper may both deliver: one duplicate run is allowed, a loss is not
    assert 2 <= len(er.starts(r, key)) <= 3


def test_sigkill_of_whole_worker_mid_run(redis_server, r, enqueuer):
    key = "claim/kill/worker"
    r.hset(f"behave:{key}", "sleep_first", "30")
    with BeatProcess(redis_server.url, env=ENV), \
            WorkerProcess(redis_server.url, ["periodic"], 1, reconcilers=RECONCILERS, env=ENV, pool="solo"):
        with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV) as doomed:
            enqueuer.add(key)
            wait_for(lambda: er.runs(r, key), 15, message="first run")
            doomed.kill()  # node loss: parent and children, no warm shutdown
        with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV):
            wait_for(lambda: er.completed(r, key) >= 1, 4 * LEASE + 10, message="the key ran again")
    assert len(er.starts(r, key)) == 2


def test_a_killed_workers_retry_runs_on_another_worker_at_its_time(redis_server, r, enqueuer):
    """A transient failure's retry waits in Redis, not in the worker that failed: killed right after the failure, it
    runs on another worker at its time, within a pump tick, with no beat and no periodic sweep to find it."""
    key = "claim/kill/retrying"
    r.hset(f"behave:{key}", mapping={"raise": "transient", "retry_after": "3", "fail_times": "1"})
    with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV, pool="threads") as doomed:
        enqueuer.add(key)
        wait_for(lambda: er.completed(r, key) >= 1 and r.zscore(keyspace.DUE, key) is not None, 15,
                 message="the first run failed and its retry is due later")
        due = float(r.zscore(keyspace.DUE, key))
        doomed.kill()  # the worker that failed the run is gone, and with it anything it held in memory
    assert due - time.time() > 0.5, "killed before the retry's time"
    with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV, pool="threads"):
        wait_for(lambda: er.completed(r, key) >= 2, due - time.time() + 15, message="the retry ran")
    _, retry = er.starts(r, key)
    assert retry >= due - 0.01, "not before its time"
    assert r.zscore(keyspace.DUE, key) is None and er.idle(r)

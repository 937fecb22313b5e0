"""The I/O-bound execution pools of ``poolboy worker`` (``--pool threads`` / ``gevent``): one process runs several
keys at once. For gevent this also proves the standard library is patched before the app is imported: an
unpatched ``time.sleep`` (or socket) would block the one OS thread, and the runs would follow one another."""

from __future__ import annotations

import pytest

from stack.testing import WorkerProcess
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, RECONCILERS
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("pool", ["threads", "gevent"])
def test_io_bound_pool_runs_keys_concurrently_in_one_process(redis_server, r, enqueuer, pool):
    keys = [f"claim/pool-{pool}/k{i}" for i in range(4)]
    for key in keys:
        r.hset(f"behave:{key}", "sleep", "2.0")
    with WorkerProcess(redis_server.url, ["claims"], 4, reconcilers=RECONCILERS, env=ENV, pool=pool) as worker:
        for key in keys:
            assert enqueuer.add(key) == "published"
        wait_for(lambda: all(er.completed(r, key) >= 1 for key in keys), 30, message="every key ran")
        assert worker.pool_pids() == [], "threads and greenlets run in the worker process itself"
    runs = {key: er.runs(r, key) for key in keys}
    assert {run["pid"] for entries in runs.values() for run in entries} == {worker.pid}
    first_start = {key: min(run["t"] for run in entries if run["e"] == "start") for key, entries in runs.items()}
    first_end = {key: min(run["t"] for run in entries if run["e"] == "end") for key, entries in runs.items()}
    assert max(first_start.values()) < min(first_end.values()), "all four runs were in progress at the same time"


def test_threads_pool_ends_a_run_past_its_soft_time_limit_and_retries_it(redis_server, r, enqueuer):
    """Celery enforces time limits only in prefork children; under threads the run's own scope ends it at its next
    stop point, as a failure retried with backoff, while the worker goes on."""
    key = "claim/pool-limit/slow"
    r.hset(f"behave:{key}", "sleep_first", "600")
    env = {**ENV, "POOLBOY_RECONCILE_SOFT_TIME_LIMIT": "1", "POOLBOY_RECONCILE_TIME_LIMIT": "30"}
    with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS, env=env, pool="threads") as worker:
        assert enqueuer.add(key) == "published"
        wait_for(lambda: er.completed(r, key) >= 2, 30, message=f"the retry ran\n{worker.log()[-3000:]}")
        assert "soft time limit of 1s" in worker.log()
    first, second = er.runs(r, key)[:2], er.runs(r, key)[2:4]
    assert first[1]["t"] - first[0]["t"] < 10, "the first run was cut at its limit, not after its 600 s"
    assert [x["e"] for x in second] == ["start", "end"]

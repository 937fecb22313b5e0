"""Graceful worker shutdown on real ``poolboy worker`` subprocesses and a real Redis.

SIGTERM lets a running reconcile finish within ``POOLBOY_WORKER_SHUTDOWN_GRACE``; one still running when the grace
ends is handed back at once — its work queue lease released and its key re-published — and another worker runs it. No
beat runs here, so the work queue's lease reaper cannot be what re-runs the key: only the hand-back can.
"""

from __future__ import annotations

import os
import signal

import pytest

from stack.testing import WorkerProcess
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, RECONCILERS
from tests.waiting import wait_for

pytestmark = pytest.mark.slow

QUEUES = ["claims"]


def stop(worker: WorkerProcess, how: str) -> None:
    """SIGTERM the parent only (what Kubernetes does to PID 1) or the whole process group (``kill -TERM -pgid``)."""
    assert worker.process is not None
    if how == "parent":
        worker.process.send_signal(signal.SIGTERM)
    else:
        os.killpg(worker.pid, signal.SIGTERM)


def exited(worker: WorkerProcess) -> bool:
    return worker.process is not None and worker.process.poll() is not None


@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_sigterm_lets_a_running_reconcile_finish_within_the_grace(redis_server, r, enqueuer, pool):
    key = f"claim/graceful/short-{pool}"
    r.hset(f"behave:{key}", "sleep", "2")
    env = {**ENV, "POOLBOY_WORKER_SHUTDOWN_GRACE": "15"}
    with WorkerProcess(redis_server.url, QUEUES, 1, reconcilers=RECONCILERS, env=env, pool=pool) as worker:
        assert enqueuer.add(key) == "published"
        wait_for(lambda: er.starts(r, key), 15, message="run started")
        stop(worker, "parent")
        wait_for(lambda: exited(worker), 20, message=f"worker exited\n{worker.log()[-3000:]}")
        assert er.completed(r, key) == 1 and len(er.starts(r, key)) == 1
        assert "handing the key back" not in worker.log()
        assert er.idle(r, tuple(QUEUES)), worker.log()[-6000:]


def runs_on(worker: WorkerProcess, pid: int) -> bool:
    """A run with this PID ran on this worker: in a pool child (prefork) or in the worker process (threads)."""
    return pid in worker.pool_pids() or pid == worker.pid


@pytest.mark.parametrize("pool, how", [("prefork", "parent"), ("prefork", "group"), ("threads", "parent")])
def test_sigterm_hands_a_long_reconcile_back_to_another_worker_at_once(redis_server, r, enqueuer, pool, how):
    key = f"claim/graceful/long-{pool}-{how}"
    r.hset(f"behave:{key}", "sleep_first", "600")  # the first run would outlast any test; later runs are instant
    env = {**ENV, "POOLBOY_WORKER_SHUTDOWN_GRACE": "1"}
    with WorkerProcess(redis_server.url, QUEUES, 1, reconcilers=RECONCILERS, env=env, pool=pool) as first, \
            WorkerProcess(redis_server.url, QUEUES, 1, reconcilers=RECONCILERS, env=env, pool=pool) as second:
        assert enqueuer.add(key) == "published"
        started = wait_for(lambda: er.runs(r, key), 15, message="first run started")[0]
        holder, other = (first, second) if runs_on(first, started["pid"]) else (second, first)
        assert runs_on(holder, started["pid"])
        stop(holder, how)
        wait_for(lambda: exited(holder), 30, message=f"stopping worker exited\n{holder.log()[-3000:]}")
        wait_for(lambda: er.completed(r, key) >= 2, 30,
                 message=f"the handed-back key run by the other worker\n{holder.log()[-3000:]}")
        runs = er.runs(r, key)
        assert [x["e"] for x in runs] == ["start", "end", "start", "end"], runs
        assert runs_on(other, runs[2]["pid"]), "the second run must be on the worker still running"
        assert "handing the key back" in holder.log()
        wait_for(lambda: er.idle(r, tuple(QUEUES)), 15, message="work queue idle: lease released, nothing left queued")

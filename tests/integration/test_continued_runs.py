"""A run that promised to wake an idle key leases it and its task runs it next (``POOLBOY_CONTINUED_RUNS`` times at
most): a real worker subprocess, Redis and the instrumented reconcilers, each run recording its Celery task id."""

from __future__ import annotations

import itertools

import pytest
import redis

from engine.enqueue import Enqueuer
from stack.testing import RedisServer, WorkerProcess
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, RECONCILERS
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


def _chain(r: redis.Redis, namespace: str) -> list[str]:
    """claim a promises handle b, which promises claim c, which promises handle d: a claim creating its handle, and
    the handle creating its claim's resource, twice over."""
    chain = [f"claim/{namespace}/a", f"handle/{namespace}/b", f"claim/{namespace}/c", f"handle/{namespace}/d"]
    for key, promised in itertools.pairwise(chain):
        r.hset(f"behave:{key}", "promise", promised)
    return chain


def _tasks_of(redis_server: RedisServer, r: redis.Redis, enqueuer: Enqueuer, chain: list[str],
              env: dict[str, str]) -> list[str]:
    """Run the chain from its first key on one worker; the Celery task each key's one run ran in."""
    with WorkerProcess(redis_server.url, ["claims", "handles"], 2, reconcilers=RECONCILERS, env=env) as worker:
        enqueuer.add(chain[0])
        wait_for(lambda: all(er.completed(r, key) for key in chain) and er.idle(r, ("claims", "handles")), 20,
                 message=f"every key of the chain run; worker log:\n{worker.log()}")
    starts = {key: [run for run in er.runs(r, key) if run["e"] == "start"] for key in chain}
    assert all(len(runs) == 1 for runs in starts.values()), f"each key runs once: {starts}"
    return [runs[0]["task"] for runs in starts.values()]


def test_a_run_goes_on_with_the_idle_key_it_promised_in_its_own_task(redis_server, r, enqueuer) -> None:
    tasks = _tasks_of(redis_server, r, enqueuer, _chain(r, "go-on"), ENV)
    assert tasks[0] is not None
    assert tasks[0] == tasks[1] == tasks[2], f"the first run and the two it went on with share a task: {tasks}"
    assert tasks[3] != tasks[0], "past the limit, the promised key gets its own message"


def test_with_no_continued_runs_every_run_is_a_task_of_its_own(redis_server, r, enqueuer) -> None:
    tasks = _tasks_of(redis_server, r, enqueuer, _chain(r, "own-tasks"), {**ENV, "POOLBOY_CONTINUED_RUNS": "0"})
    assert len(set(tasks)) == len(tasks), f"one task per run: {tasks}"

"""Work queue benchmark: cost of one ADD, and how well two real workers coalesce a 1 000-event burst on 10 keys.

Prints one JSON document. Figures, not assertions: run ``.venv/bin/python benchmarks/workqueue_bench.py``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
from celery import Celery

from poolboy.settings import Settings
from stack.testing import RedisServer, WorkerProcess
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, LEASE, RECONCILERS
from tests.waiting import wait_for
from workers.messages import enqueuer as celery_enqueuer
from workqueue.queue import WorkQueue


def add_cost(client: redis.Redis, n: int = 20000) -> dict[str, float]:
    work_queue = WorkQueue(client)
    began = time.perf_counter()
    for i in range(n):
        work_queue.add(f"claim/bench/k{i}")
    fresh = (time.perf_counter() - began) / n * 1e6
    began = time.perf_counter()
    for _ in range(n):
        work_queue.add("claim/bench/k0")
    coalesced = (time.perf_counter() - began) / n * 1e6
    began = time.perf_counter()
    batch = [f"claim/bench/p{i}" for i in range(n)]
    for i in range(0, n, 500):
        work_queue.add_many(batch[i:i + 500])
    pipelined = (time.perf_counter() - began) / n * 1e6
    client.flushall()
    return {"add_us_new_key": round(fresh, 1), "add_us_coalesced": round(coalesced, 1),
            "add_many_us_per_key": round(pipelined, 1)}


def burst(server: RedisServer, client: redis.Redis, events: int = 1000, nkeys: int = 10) -> dict[str, float]:
    keys = [f"claim/burst/k{i}" for i in range(nkeys)]
    for key in keys:
        client.hset(f"behave:{key}", "sleep", "0.05")
    app = Celery("bench", broker=server.url, set_as_current=False)
    settings = Settings.from_env(redis_url=server.url, workqueue_lease_seconds=LEASE)
    enqueuer = celery_enqueuer(app, settings)
    with WorkerProcess(server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV), \
            WorkerProcess(server.url, ["claims"], 2, reconcilers=RECONCILERS, env=ENV):
        began = time.perf_counter()
        outcomes = [enqueuer.add(keys[i % nkeys]) for i in range(events)]
        publish_s = time.perf_counter() - began
        wait_for(lambda: er.idle(client), 60, message="idle")
        drained_s = time.perf_counter() - began
    app.close()
    runs = sum(len(er.starts(client, key)) for key in keys)
    return {"events": events, "keys": nkeys, "published": outcomes.count("published"), "runs": runs,
            "runs_goal_max": 20, "burst_publish_s": round(publish_s, 3), "drain_s": round(drained_s, 3)}


def main() -> None:
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        print(json.dumps({**add_cost(client), **burst(server, client)}, indent=2))


if __name__ == "__main__":
    main()

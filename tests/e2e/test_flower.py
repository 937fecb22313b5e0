"""Flower as its users expect, on the stack as ``poolboy dev`` starts it: every worker online with its counts,
every reconcile with its object key, state and runtime, each queue with its depth, a task list that stays quiet at
rest, and the ``flower_*`` series on Flower's own ``/metrics`` with no family of Poolboy's components.

Claims are created through the API; everything else is read from Flower's pages in headless Chromium (as a person
sees them) and its HTTP endpoints (``/api/workers``, ``/api/tasks``, ``/metrics``), as a dashboard or a scraper
would.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

import cache.reader
import cache.writer
import engine.metrics
import engine.own_writes
import watcher.metrics
import watcher.observed
import watcher.pool_flow
from engine.registries import WATCHER, WORKER, family_names
from poolboy import kinds
from poolboy.kube import KubeClient
from procutil import free_port
from stack.flower import TASK_COLUMNS
from stack.local import LocalStack
from tests import browser
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS, free_port_pair
from tests.flower_pages import queue_depths, tables
from tests.integration.example_claims import apply_examples, claim_ready, create_claim
from tests.waiting import holds_until, wait_for
from workers.names import QUEUE_LISTS, reconcile_task
from workqueue import keyspace

CLAIMS = [f"flower-{i}" for i in range(4)]
#: the modules that declare the components' metric families, imported so that their registries are complete here
DECLARING = (cache.reader, cache.writer, engine.metrics, engine.own_writes, watcher.metrics, watcher.observed,
             watcher.pool_flow)
#: what a run can come to, as its task's result (:mod:`engine.outcome`, and a START that found the key busy or Redis
#: refusing it)
RESULTS = {"success", "requeue_after", "error", "permanent_error", "handed_back", "busy", "refused"}
#: beat's sweeps the at-rest window waits for (redbeat's schedule entries, :func:`workers.config.beat_schedule`)
SWEEPS = [f"manage-{kind.queue}" for kind in kinds.DECLARED if kind.sweep_interval]
needs_chromium = pytest.mark.skipif(browser.find() is None,
                                    reason="chromium is not installed (scripts/bootstrap.sh --all installs it)")


@pytest.fixture(scope="module")
def flower_stack() -> Iterator[LocalStack]:
    # the resync, a worker's task every POOLBOY_RESYNC_INTERVAL, stays out of the at-rest window
    options = e2e_options(workers=1, concurrency=2, flower_port=free_port(), metrics_port=free_port_pair(),
                          env={**FAST_INTERVALS, "POOLBOY_RESYNC_INTERVAL": "3600"})
    with LocalStack(options) as running:
        yield running


@pytest.fixture(scope="module")
def claimed(flower_stack: LocalStack) -> list[str]:
    """The examples' namespaces, provider and pool, then CLAIMS against the provider; their keys once all are Ready."""
    kube = KubeClient.from_settings(kubeconfig=str(flower_stack.kubeconfig))
    apply_examples(kube)
    for name in CLAIMS:
        create_claim(kube, name)
    wait_for(lambda: all(claim_ready(kube, name) for name in CLAIMS), timeout=60, interval=0.5,
             message=f"claims {CLAIMS} to be Ready\n{flower_stack.logs()}")
    return [f"claim/demo/{name}" for name in CLAIMS]

def flower_url(stack: LocalStack, path: str) -> str:
    return f"http://127.0.0.1:{stack.options.flower_port}{path}"


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def flower_json(stack: LocalStack, path: str) -> dict:
    return json.loads(fetch(flower_url(stack, path)))


def families(url: str) -> set[str]:
    """The metric families a /metrics endpoint serves (a counter's name without ``_total``)."""
    return {family.name for family in text_string_to_metric_families(fetch(url).decode())}


def worker_name(stack: LocalStack) -> str:
    return wait_for(lambda: next((name for name in flower_json(stack, "/api/workers") if name.startswith("worker0@")),
                                 None), timeout=30, interval=0.5, message="worker0 in Flower")


def test_workers_are_listed_online_with_their_counts(flower_stack: LocalStack, claimed: list[str]) -> None:
    def online_with_counts() -> dict | None:
        workers = flower_json(flower_stack, "/api/workers?refresh=1")
        status = flower_json(flower_stack, "/api/workers?status=1")
        worker0 = next((name for name in workers if name.startswith("worker0@")), None)
        if worker0 is None or status.get(worker0) is not True:
            return None
        totals = workers[worker0].get("stats", {}).get("total", {})
        return workers[worker0] if totals.get("poolboy.reconcile.claim", 0) >= len(claimed) else None

    worker = wait_for(online_with_counts, timeout=30, interval=0.5,
                      message="worker0 online in Flower with its claim reconciles counted")
    assert worker["stats"]["pool"]["max-concurrency"] == 2
    assert {q["name"] for q in worker["active_queues"]} >= {"claims", "handles", "pools", "periodic"}


def test_tasks_carry_the_object_key_state_and_runtime(flower_stack: LocalStack, claimed: list[str]) -> None:
    def claim_tasks() -> dict[str, dict] | None:
        tasks = flower_json(flower_stack, "/api/tasks?taskname=poolboy.reconcile.claim&state=SUCCESS&limit=2000")
        by_key = {task["args"]: task for task in tasks.values() if task["args"] in claimed}
        return by_key if set(by_key) == set(claimed) else None

    by_key = wait_for(claim_tasks, timeout=30, interval=0.5, message="a succeeded claim task per claim in Flower")
    for task in by_key.values():
        assert task["name"] == reconcile_task("claim")
        assert task["state"] == "SUCCESS" and task["worker"].startswith("worker0@")
        assert task["runtime"] is not None and task["runtime"] > 0
        assert task["received"] and task["started"] and task["succeeded"]


@needs_chromium
def test_flower_pages_show_claim_keys_counts_per_kind_workers_and_queue_depths(
        flower_stack: LocalStack, claimed: list[str]) -> None:
    """The Tasks page (filtered by a kind's task name, as its name links do) lists each claim's key in its row, the
    worker's page counts its tasks per kind, the Workers page lists it online, the Broker page each queue's depth."""
    columns = TASK_COLUMNS.split(",")

    def claim_rows() -> list[dict[str, str]] | None:
        dom = browser.dump_dom(flower_url(flower_stack, f"/tasks?name={reconcile_task('claim')}"))
        rows = [dict(zip(columns, row, strict=False)) for row in tables(dom).get("tasks-table", [])]
        return rows if {row.get("args") for row in rows} >= set(claimed) else None

    rows = wait_for(claim_rows, timeout=30, interval=0.5, message="every claim's key on Flower's Tasks page")
    assert {row["name"] for row in rows} == {reconcile_task("claim")}
    assert {row["args"] for row in rows} <= set(claimed), "only the claims' runs, each naming its object"
    assert {row["result"].strip("'") for row in rows} <= RESULTS, "each run's result says what it came to"

    name = worker_name(flower_stack)
    processed = {task: int(count.replace(",", "")) for task, count in
                 tables(browser.dump_dom(flower_url(flower_stack, f"/worker/{name}"))).get("Processed tasks", [])}
    assert processed[reconcile_task("claim")] >= len(claimed)
    assert processed[reconcile_task("handle")] >= 1 and processed[reconcile_task("pool")] >= 1

    workers = tables(browser.dump_dom(flower_url(flower_stack, "/workers")))["workers-table"]
    assert [(row[0], row[1]) for row in workers] == [(name, "Online")]
    assert int(workers[0][3].replace(",", "")) >= len(claimed)  # Processed: the tasks it received

    depths = queue_depths(browser.dump_dom(flower_url(flower_stack, "/broker")))
    r = redis.Redis.from_url(flower_stack.redis_url)
    assert depths == {queue: sum(r.llen(name) for name in lists) for queue, lists in QUEUE_LISTS.items()}


def test_each_component_serves_only_its_own_metric_families(flower_stack: LocalStack, claimed: list[str]) -> None:
    """Flower's /metrics carries no family of Poolboy's, a worker's none the watcher alone records, and the
    watcher's none a worker alone records (each counts only what it does)."""
    worker_own, watcher_own = family_names(WORKER), family_names(WATCHER)
    base = flower_stack.options.metrics_port
    on_flower = families(flower_url(flower_stack, "/metrics"))
    on_worker = families(f"http://127.0.0.1:{base + 1}/metrics")
    on_watcher = families(f"http://127.0.0.1:{base}/metrics")
    assert {"flower_events", "flower_worker_online"} <= on_flower
    assert not on_flower & (worker_own | watcher_own)
    assert not {name for name in on_flower if not name.startswith(("flower_", "process_", "python_"))}
    assert {"controller_runtime_reconcile", "poolboy_celery_queue_length"} <= on_worker
    assert not on_worker & (watcher_own - worker_own), "a worker serves families of the watcher's"
    assert {"poolboy_watcher_events", "poolboy_claim_ready_seconds"} <= on_watcher
    assert not on_watcher & (worker_own - watcher_own), "the watcher serves families of a worker's"

def test_at_rest_beat_sweeps_send_no_task_to_the_list(flower_stack: LocalStack, claimed: list[str]) -> None:
    """Housekeeping does not bury reconciles: once the claims are Ready and nothing is owed a run, beat sweeps
    claims, handles and pools twice each (every 3 to 5 s here) and Flower's task list gains no row."""
    r = redis.Redis.from_url(flower_stack.redis_url, decode_responses=True)

    def task_ids() -> set[str]:
        return set(flower_json(flower_stack, "/api/tasks?limit=20000"))

    def at_rest() -> set[str] | None:
        tasks = flower_json(flower_stack, "/api/tasks?limit=20000")
        running = [task for task in tasks.values() if task["state"] not in ("SUCCESS", "FAILURE")]
        owed = next(r.scan_iter(match=keyspace.pending("*"), count=1000), None)
        return set(tasks) if not running and owed is None else None

    def sweeps() -> dict[str, int]:
        return {name: json.loads(r.hget(keyspace.BEAT + name, "meta") or "{}").get("total_run_count", 0)
                for name in SWEEPS}

    known = wait_for(at_rest, timeout=30, interval=0.5, message="no task running and no key owed a run")
    start = sweeps()

    def quiet() -> None:
        new = task_ids() - known
        if new:
            tasks = flower_json(flower_stack, "/api/tasks?limit=20000")
            raise AssertionError(f"tasks at rest: {[(tasks[i]['name'], tasks[i]['args']) for i in new]}")

    holds_until(quiet, lambda: all(count >= start[name] + 2 for name, count in sweeps().items()), timeout=30,
                interval=0.5, message="beat's sweeps of claims, handles and pools to run twice each")

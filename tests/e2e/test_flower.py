"""Flower as its users expect, on the stack as ``poolboy dev`` starts it: every worker online with its counts,
every reconcile with its object key, state and runtime, and the ``flower_*`` series on Flower's own ``/metrics``.

Claims are created through the API; everything else is read from Flower's HTTP endpoints (``/api/workers``,
``/api/tasks``, ``/metrics``), as a dashboard or a scraper would.
"""

from __future__ import annotations

import ast
import contextlib
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from poolboy.kube import AlreadyExists, KubeClient
from procutil import free_port
from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

D = "poolboy.gpte.redhat.com"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLAIMS = [f"flower-{i}" for i in range(4)]


@pytest.fixture(scope="module")
def flower_stack() -> Iterator[LocalStack]:
    options = e2e_options(workers=1, concurrency=2, flower_port=free_port(),
                           env=dict(FAST_INTERVALS))
    with LocalStack(options) as running:
        yield running


@pytest.fixture(scope="module")
def claimed(flower_stack: LocalStack) -> list[str]:
    """The examples' namespaces, provider and pool, then CLAIMS against the provider; their keys once all are Ready."""
    kube = KubeClient.from_settings(kubeconfig=str(flower_stack.kubeconfig))
    for manifest in sorted(EXAMPLES.glob("[012]*.yaml")):
        for doc in yaml.safe_load_all(manifest.read_text()):
            with contextlib.suppress(AlreadyExists):
                kube.create(doc)
    for name in CLAIMS:
        kube.create({"apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "demo"},
                     "spec": {"provider": {"name": "hello", "parameterValues": {"greeting": name}}}})

    def ready(name: str) -> bool:
        claim = kube.get(f"{D}/v1", "ResourceClaim", name, "demo")
        conditions = (claim.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    wait_for(lambda: all(ready(name) for name in CLAIMS), timeout=60, interval=0.5,
             message=f"claims {CLAIMS} to be Ready\n{flower_stack.logs()}")
    return [f"claim/demo/{name}" for name in CLAIMS]


def flower(stack: LocalStack, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{stack.options.flower_port}{path}", timeout=10) as response:
        return response.read()


def flower_json(stack: LocalStack, path: str) -> dict:
    return json.loads(flower(stack, path))


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
        by_key: dict[str, dict] = {}
        for task in tasks.values():
            for key in claimed:
                if key in task["args"]:
                    by_key[key] = task
        return by_key if set(by_key) == set(claimed) else None

    by_key = wait_for(claim_tasks, timeout=30, interval=0.5, message="a succeeded claim task per claim in Flower")
    for key, task in by_key.items():
        assert list(ast.literal_eval(task["args"])) == [key]  # the work key, as Flower shows it
        assert task["state"] == "SUCCESS" and task["worker"].startswith("worker0@")
        assert task["runtime"] is not None and task["runtime"] > 0
        assert task["received"] and task["started"] and task["succeeded"]


def test_flower_metrics_count_task_events_and_workers_online(flower_stack: LocalStack, claimed: list[str]) -> None:
    def samples() -> dict[tuple[str, str, str], float]:
        found: dict[tuple[str, str, str], float] = {}
        for family in text_string_to_metric_families(flower(flower_stack, "/metrics").decode()):
            for sample in family.samples:
                if sample.name == "flower_events_total":
                    found[("events", sample.labels["type"], sample.labels["task"])] = sample.value
                elif sample.name == "flower_worker_online":
                    found[("online", sample.labels["worker"], "")] = sample.value
        return found

    def complete() -> dict | None:
        found = samples()
        succeeded = found.get(("events", "task-succeeded", "poolboy.reconcile.claim"), 0)
        online = [value for (what, _, _), value in found.items() if what == "online"]
        return found if succeeded >= len(claimed) and online == [1.0] else None

    found = wait_for(complete, timeout=30, interval=0.5,
                     message="flower_events_total{type=task-succeeded} per claim run and flower_worker_online == 1")
    assert found[("events", "task-received", "poolboy.reconcile.claim")] >= len(claimed)
    assert found.get(("events", "task-succeeded", "poolboy.reconcile.handle"), 0) >= 1

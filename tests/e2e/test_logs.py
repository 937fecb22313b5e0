"""Logs an operator can use, read from the components of a real stack in JSON (``POOLBOY_LOG_FORMAT=json``).

At DEBUG every line is there, each with its level, so one stack shows: every line of every component is one JSON
object; a reconcile's line names its object; Celery's per-task lines and beat's per-tick lines are DEBUG; a
permanent error is announced once at WARNING while the pool runs again for each change to it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
#: the example provider's parameter is a string: an integer makes this pool's every run a permanent error
BAD_POOL = """
apiVersion: poolboy.gpte.redhat.com/v1
kind: ResourcePool
metadata: {name: bad-greeting, namespace: poolboy}
spec:
  minAvailable: 1
  provider: {name: hello, parameterValues: {greeting: 42}}
"""


@pytest.fixture(scope="module")
def json_stack() -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_LOG_FORMAT": "json", "POOLBOY_LOG_LEVEL": "DEBUG",
           "POOLBOY_PERMANENT_ERROR_RECHECK": "300"}
    with LocalStack(e2e_options(workers=1, concurrency=2, env=env)) as running:
        yield running


def kubectl(stack: LocalStack, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, check=True).stdout


def records(stack: LocalStack, component: str) -> list[dict]:
    """Every line of the component's log, parsed; a line that is not one JSON object fails the test."""
    lines = stack.child(component).log_path.read_text(errors="replace").splitlines()
    parsed = []
    for line in lines:
        if not line.strip():
            continue
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"{component}: a line that is not JSON: {line!r}")
    return parsed


def about(items: list[dict], kind: str, namespace: str, name: str) -> list[dict]:
    return [r for r in items if (r.get("kind"), r.get("namespace"), r.get("name")) == (kind, namespace, name)]


def test_json_logs_name_objects_and_keep_routine_lines_at_debug(json_stack: LocalStack) -> None:
    stack = json_stack
    kubectl(stack, "apply", "-f", str(ROOT / "examples"))
    kubectl(stack, "wait", "--for=condition=Ready", "--timeout=60s", "-n", "demo", "rclaim/hello")
    kubectl(stack, "apply", "-f", "-", stdin=BAD_POOL)

    def bad_pool_runs() -> list[dict]:
        return [r for r in about(records(stack, "worker-0"), "pool", "poolboy", "bad-greeting")
                if r["logger"] == "workers.reconcile" and "permanent error ValidationFailed" in r["message"]]

    # each change to the bad pool runs it again (its error stays the same): three runs, whatever their level
    for touch in range(1, 3):
        wait_for(lambda n=touch: len(bad_pool_runs()) >= n, timeout=60, interval=0.5, message=f"run {touch}")
        kubectl(stack, "annotate", "--overwrite", "-n", "poolboy", "resourcepool/bad-greeting", f"touched={touch}")
    wait_for(lambda: len(bad_pool_runs()) >= 3, timeout=60, interval=0.5, message="three runs of the bad pool")
    runs = bad_pool_runs()
    levels = [r["level"] for r in runs]
    assert levels.count("WARNING") == 1, f"announced once per change and re-check interval, not per run: {levels}"
    assert levels[0] == "WARNING" and set(levels[1:]) == {"DEBUG"}, levels
    assert "re-check in 300s" in runs[0]["message"]

    worker = records(stack, "worker-0")
    for item in worker + records(stack, "beat") + records(stack, "watcher"):
        assert {"time", "level", "logger", "message"} <= item.keys(), item
    claim_lines = [r for r in about(worker, "claim", "demo", "hello") if r["logger"] == "workers.reconcile"]
    assert any(r["level"] == "INFO" and " ms" in r["message"] and "write" in r["message"] for r in claim_lines), \
        "a reconcile that changed the claim is one INFO line naming it, with its duration and writes"
    celery_task_lines = [r for r in worker if r["logger"] in ("celery.app.trace", "celery.worker.strategy")
                         and r["level"] == "INFO"]
    assert not celery_task_lines, f"Celery's per-task lines are DEBUG: {celery_task_lines[:3]}"
    # beat's first entries fall due one interval after it starts, which the steps above may all beat to
    def ticks() -> list[dict]:
        return [r for r in records(stack, "beat") if r["message"].startswith("Scheduler: Sending due task")]

    sent = wait_for(ticks, timeout=30, interval=0.5, message="beat sends a due task")
    assert {r["level"] for r in sent} == {"DEBUG"}, f"beat's per-tick lines are DEBUG: {sent[:3]}"

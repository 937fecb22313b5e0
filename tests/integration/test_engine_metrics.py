"""The worker parent serves Prometheus metrics aggregated over its prefork children (multiprocess mode)."""

from __future__ import annotations

import os
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from stack.testing import WorkerProcess, free_port
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, RECONCILERS
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


def _scrape(port: int) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_reconcile_counts_are_summed_over_children(redis_server, r, enqueuer):
    port = free_port()
    keys = [f"claim/metrics/k{i}" for i in range(10)]
    for key in keys:
        r.hset(f"behave:{key}", "sleep", "0.2")  # long enough that both children take some
    r.hset("behave:claim/metrics/bad", mapping={"raise": "permanent", "recheck_after": "3600"})
    with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS,
                       env={**ENV, "POOLBOY_METRICS_PORT": str(port)}):
        enqueuer.add_many([*keys, "claim/metrics/bad"])
        wait_for(lambda: all(er.completed(r, k) for k in [*keys, "claim/metrics/bad"]), 20, message="all runs")
        children = {run["pid"] for key in keys for run in er.runs(r, key)}
        assert len(children) == 2, f"the successes ran in both children, so that serving one alone shows: {children}"
        success = ("controller_runtime_reconcile_total", (("controller", "claim"), ("result", "success")))
        samples = wait_for(lambda: (s := _scrape(port)).get(success) == 10 and s, 10, message="10 successes")
    assert samples[("controller_runtime_reconcile_total",
                    (("controller", "claim"), ("result", "permanent_error")))] == 1
    assert samples[("controller_runtime_reconcile_errors_total", (("controller", "claim"),))] == 1
    assert samples[("poolboy_delaying_queue_size", ())] == 1  # the permanent error's slow re-check
    assert ("poolboy_celery_queue_length", (("queue", "claims"),)) in samples
    assert samples[("controller_runtime_reconcile_time_seconds_count", (("controller", "claim"),))] == 11


def test_the_samples_directory_a_worker_made_goes_when_it_stops(redis_server, tmp_path):
    """Without ``PROMETHEUS_MULTIPROC_DIR`` the worker makes its own under the temporary directory; a clean stop
    removes it, so restarting workers does not fill ``/tmp``."""
    port = free_port()
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ and "PROMETHEUS_MULTIPROC_DIR" not in ENV
    with WorkerProcess(redis_server.url, ["claims"], 2, reconcilers=RECONCILERS,
                       env={**ENV, "POOLBOY_METRICS_PORT": str(port), "TMPDIR": str(tmp_path)}) as worker:
        wait_for(lambda: _scrape(port), 10, message="metrics served")
        made = list(tmp_path.glob("poolboy-metrics-*"))
        assert len(made) == 1 and any(made[0].iterdir()), f"one samples directory, written to: {made}"
    assert worker.process.returncode == 0, worker.log()
    assert not list(tmp_path.glob("poolboy-metrics-*"))

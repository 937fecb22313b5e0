"""The project's own counts of its work, summed over components from their /metrics, as per-claim deltas."""

from __future__ import annotations

import collections
import http.server
import threading
from collections.abc import Iterator

import pytest

from benchmarks import operator_metrics

WORKER = """\
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="claim",result="success"} 7.0
controller_runtime_reconcile_total{controller="claim",result="error"} 1.0
controller_runtime_reconcile_total{controller="handle",result="success"} 4.0
"""
WATCHER = """\
# TYPE poolboy_workqueue_adds_total counter
poolboy_workqueue_adds_total{outcome="added"} 9.0
poolboy_workqueue_adds_total{outcome="own_write"} 3.0
"""


@pytest.fixture
def components() -> Iterator[dict[str, str]]:
    bodies = {"/worker": WORKER, "/watcher": WATCHER}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = bodies[self.path].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield {"worker-0": base + "/worker", "watcher": base + "/watcher"}
    server.shutdown()


def test_runs_by_controller_and_work_queue_outcomes_are_summed_over_components(components: dict[str, str]) -> None:
    counts = operator_metrics.snapshot(components)
    assert counts == {"runs claim": 8, "runs handle": 4, "work queue added": 9, "work queue own_write": 3}
    assert operator_metrics.claim_runs(components) == 8


def test_per_claim_is_the_delta_between_two_snapshots() -> None:
    before = collections.Counter({"runs claim": 8, "work queue added": 9})
    after = collections.Counter({"runs claim": 20, "work queue added": 9, "runs handle": 6})
    assert operator_metrics.per_claim(before, after, n=4) == {"runs claim": 3.0, "runs handle": 1.5}

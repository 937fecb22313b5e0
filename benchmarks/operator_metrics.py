"""What the project's components count of their own work, from their ``/metrics``: reconcile runs by controller and
the work queue's outcomes for watch events (added, coalesced, skipped as an own write, deferred to a running run).

Runs per claim by controller say which reconcile a workload pays for more than once, where requests and CPU only
say that something costs; the work queue's outcomes say why a run happened.
"""

from __future__ import annotations

import collections
import urllib.request
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

from stack import ports

RUNS = "controller_runtime_reconcile_total"
ADDS = "poolboy_workqueue_adds_total"


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports (the watcher's and each worker's metrics)."""
    for _ in range(50):
        base = ports.free()
        try:
            ports.check(ports.PortRequest(base + offset, "metrics", "") for offset in range(count))
        except ports.PortTaken:
            continue
        return base
    raise SystemExit("no consecutive free ports for the components' metrics")


def snapshot(metrics_urls: Mapping[str, str]) -> collections.Counter[str]:
    """``runs <controller>`` and ``work queue <outcome>`` summed over every component now."""
    counts: collections.Counter[str] = collections.Counter()
    for url in metrics_urls.values():
        with urllib.request.urlopen(url, timeout=10) as reply:
            text = reply.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == RUNS:
                    counts[f"runs {sample.labels.get('controller')}"] += int(sample.value)
                elif sample.name == ADDS:
                    counts[f"work queue {sample.labels.get('outcome')}"] += int(sample.value)
    return counts


def claim_runs(metrics_urls: Mapping[str, str]) -> int:
    """Claim reconcile runs counted so far (every result)."""
    return snapshot(metrics_urls)["runs claim"]


def per_claim(before: collections.Counter[str], after: collections.Counter[str], n: int) -> dict[str, float]:
    """What happened between two snapshots, per claim, largest first."""
    delta = after - before
    return {key: round(value / n, 2) for key, value in delta.most_common()}

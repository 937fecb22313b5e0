"""What kube-apiserver says it served, from its own ``/metrics``: requests by verb and resource, their latency, and
the etcd requests behind them.

A snapshot holds the three counter families the benchmark reads; :func:`delta` subtracts two. The figures cover
every client of the API server (the operator, the benchmark, the controller manager), which is what the API server
and etcd paid for: the operator's own share by verb and resource comes from the audit log
(:mod:`controlplane.audit`), where each request names its user.

* ``apiserver_request_total{verb, resource, code}``: requests answered (a watch counts when it ends);
* ``apiserver_request_duration_seconds{verb}``: sum and count, so a mean per verb over the window;
* ``etcd_request_duration_seconds{operation, type}``: sum and count per etcd operation and object type.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Key = tuple[str, ...]


@dataclass
class Snapshot:
    """Counter values at one moment: ``requests[(verb, resource)]``, ``(sum, count)`` per verb and per etcd
    ``(operation, type)``."""

    requests: collections.Counter[Key] = field(default_factory=collections.Counter)
    latency: dict[Key, tuple[float, float]] = field(default_factory=dict)
    etcd: dict[Key, tuple[float, float]] = field(default_factory=dict)


def parse(text: str) -> Snapshot:
    """The snapshot in one ``/metrics`` answer."""
    snapshot = Snapshot()
    sums: dict[str, dict[Key, float]] = {"latency": collections.defaultdict(float),
                                         "etcd": collections.defaultdict(float)}
    counts: dict[str, dict[Key, float]] = {"latency": collections.defaultdict(float),
                                           "etcd": collections.defaultdict(float)}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "apiserver_request_total":
                resource = labels.get("resource") or "(none)"
                if labels.get("subresource"):
                    resource += "/" + labels["subresource"]
                snapshot.requests[(labels.get("verb", ""), resource)] += int(sample.value)
            elif family.name in ("apiserver_request_duration_seconds", "etcd_request_duration_seconds"):
                which = "latency" if family.name.startswith("apiserver") else "etcd"
                key = (labels.get("verb", ""),) if which == "latency" else (labels.get("operation", ""),
                                                                            labels.get("type", ""))
                if sample.name.endswith("_sum"):
                    sums[which][key] += sample.value
                elif sample.name.endswith("_count"):
                    counts[which][key] += sample.value
    snapshot.latency = {key: (sums["latency"][key], counts["latency"][key]) for key in counts["latency"]}
    snapshot.etcd = {key: (sums["etcd"][key], counts["etcd"][key]) for key in counts["etcd"]}
    return snapshot


def scrape(get: Callable[[str], str]) -> Snapshot:
    """``get("/metrics")`` (an admin request to the API server) parsed."""
    return parse(get("/metrics"))


def _means(before: dict[Key, tuple[float, float]], after: dict[Key, tuple[float, float]]
           ) -> dict[str, dict[str, float]]:
    result = {}
    for key, (total, count) in sorted(after.items()):
        old_total, old_count = before.get(key, (0.0, 0.0))
        if count - old_count > 0:
            result[" ".join(part for part in key if part)] = {
                "count": int(count - old_count), "mean_ms": round((total - old_total) * 1000 / (count - old_count), 2)}
    return result


def delta(before: Snapshot, after: Snapshot, n: int = 1) -> dict[str, Any]:
    """What was served between two snapshots: requests by ``verb resource`` (per claim when ``n`` is the number
    of claims), the mean API latency per verb and the etcd requests with their mean latency."""
    requests = collections.Counter({f"{verb} {resource}": after.requests[(verb, resource)] - before.requests[(verb,
                                    resource)] for verb, resource in after.requests})
    served = {key: value for key, value in requests.most_common() if value > 0}
    etcd = _means(before.etcd, after.etcd)
    return {
        "requests_per_claim": {"total": round(sum(served.values()) / n, 2),
                               **{key: round(value / n, 2) for key, value in served.items()}},
        "latency_by_verb": _means(before.latency, after.latency),
        "etcd_requests_per_claim": round(sum(entry["count"] for entry in etcd.values()) / n, 2),
        "etcd_by_operation_type": etcd,
    }

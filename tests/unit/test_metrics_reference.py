"""``docs/metrics.md`` is what the code defines (``stack/metrics_reference.py``), and every metric the shipped
dashboard and rules query is one the code serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from stack import metrics_reference

ROOT = Path(__file__).resolve().parents[2]
#: series suffixes a histogram is served with
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")
#: metrics the rules read from a Redis exporter beside Poolboy (silent without one)
EXPORTER_METRICS = {"redis_memory_used_bytes", "redis_memory_max_bytes"}


def served_series() -> set[str]:
    names = set()
    for module in metrics_reference.metric_modules():
        for doc in metrics_reference.metrics_of(module):
            names.add(doc.name)
            if doc.type == "histogram":
                names.update(doc.name + suffix for suffix in HISTOGRAM_SERIES)
    return names


def queried_metrics(expr: str) -> set[str]:
    """The metric names in a PromQL expression (Poolboy's, an exporter's, recorded ones with a colon), leaving out
    functions, keywords, labels and their values."""
    without_labels = re.sub(r"\{[^}]*\}|\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    return {name for name in re.findall(r"\b[a-z_][a-z0-9_:]*\b", without_labels)
            if name.startswith(("poolboy_", "controller_runtime_", "rest_client_", "redis_")) or ":" in name}


def test_the_committed_reference_is_what_the_code_defines() -> None:
    assert (ROOT / "docs" / "metrics.md").read_text() == metrics_reference.render(), \
        "docs/metrics.md is out of date: run python -m stack.metrics_reference"


def test_the_reference_has_the_claim_latency_histograms_with_their_meaning() -> None:
    rows = [line for line in metrics_reference.render().splitlines() if line.startswith("| `poolboy_claim_")]
    assert any(row.startswith("| `poolboy_claim_bind_seconds` | histogram |") and "Bound" in row for row in rows)
    assert any(row.startswith("| `poolboy_claim_ready_seconds` | histogram |") and "Ready" in row for row in rows)


def test_every_dashboard_panel_queries_metrics_the_code_serves() -> None:
    dashboard = json.loads((ROOT / "helm" / "dashboards" / "poolboy.json").read_text())

    def panels(items: list[dict]) -> list[dict]:
        return [p for item in items for p in (item, *panels(item.get("panels", [])))]

    exprs = [target["expr"] for panel in panels(dashboard["panels"]) for target in panel.get("targets", [])]
    unknown = {expr: sorted(queried_metrics(expr) - served_series()) for expr in exprs}
    assert exprs and not any(unknown.values()), {expr: names for expr, names in unknown.items() if names}


def test_every_rule_reads_metrics_the_code_serves_or_another_rule_records() -> None:
    rules = [rule for group in yaml.safe_load((ROOT / "helm" / "files" / "prometheus-rules.yaml").read_text())["groups"]
             for rule in group["rules"]]
    known = served_series() | EXPORTER_METRICS | {rule["record"] for rule in rules if "record" in rule}
    unknown = {rule.get("record") or rule["alert"]: sorted(queried_metrics(rule["expr"]) - known) for rule in rules}
    assert not any(unknown.values()), {name: names for name, names in unknown.items() if names}


def test_the_expression_reader_finds_metric_names_and_skips_labels() -> None:
    expr = ('histogram_quantile(0.95, sum by (le, controller) (rate(poolboy_workqueue_wait_seconds_bucket'
            '{controller="poolboy_x"}[5m]))) and on (pool) namespace_pool:poolboy_pool_min_available:max > 0')
    assert queried_metrics(expr) == {"poolboy_workqueue_wait_seconds_bucket",
                                     "namespace_pool:poolboy_pool_min_available:max"}

"""The metrics reference, ``docs/metrics.md``, written from the metric definitions themselves.

``python -m stack.metrics_reference`` imports every module of the adapters that defines metrics (those that use
``prometheus_client``) and lists each counter, gauge and histogram it defines, and each :class:`GaugeSpec` a collector
computes on scrape, with its type, labels and help; ``--check`` exits 1 when the file differs from what the code says
(``tests/unit/test_metrics_reference.py`` compares them too), so the reference cannot drift from the code.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from prometheus_client.metrics import MetricWrapperBase

from engine.gauge_spec import GaugeSpec
from engine.metrics import DEPRECATED_NAMES

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "metrics.md"
#: the packages whose modules define Poolboy's metrics
PACKAGES = ("engine", "cache", "watcher", "workers", "workqueue")


@dataclass(frozen=True)
class MetricDoc:
    name: str  # as scraped: a counter with ``_total``, a histogram's base name
    type: str
    labels: tuple[str, ...]
    meaning: str


def metric_modules() -> list[ModuleType]:
    """The modules of :data:`PACKAGES` that use ``prometheus_client``, in path order."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            if path.stem != "__init__" and "prometheus_client" in path.read_text():
                found.append(importlib.import_module(f"{package}.{path.stem}"))
    return found


def _declared(value: object) -> Iterator[object]:
    """``value`` and what a module-level dict or tuple of it holds (a collector's table of gauges)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _declared(item)
    elif isinstance(value, tuple) and not isinstance(value, GaugeSpec):
        for item in value:
            yield from _declared(item)
    else:
        yield value


def metrics_of(module: ModuleType) -> list[MetricDoc]:
    """The metrics ``module`` defines, in the order it defines them."""
    docs: dict[str, MetricDoc] = {}
    for value in vars(module).values():
        for item in _declared(value):
            if isinstance(item, MetricWrapperBase):
                family = item.describe()[0]
                name = family.name + ("_total" if family.type == "counter" else "")
                # prometheus_client has no public accessor for a metric's label names
                labels = tuple(getattr(item, "_labelnames", ()))
                docs[name] = MetricDoc(name, family.type, labels, family.documentation)
            elif isinstance(item, GaugeSpec):
                docs[item.name] = MetricDoc(item.name, "gauge", item.labels, item.documentation)
    return list(docs.values())


def _markdown(text: str) -> str:
    """A docstring line as Markdown: Sphinx roles and double backticks become code spans."""
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text).replace("``", "`")


def _row(doc: MetricDoc) -> str:
    labels = ", ".join(f"`{label}`" for label in doc.labels) or "—"
    return f"| `{doc.name}` | {doc.type} | {labels} | {_markdown(doc.meaning).replace('|', '/')} |"


def render() -> str:
    """The whole of ``docs/metrics.md``."""
    lines = [
        "# Metrics reference",
        "",
        "Every metric Poolboy's components serve on their `/metrics` (`POOLBOY_METRICS_PORT`), by the module that "
        "defines it. Generated from the code by `python -m stack.metrics_reference`; do not edit by hand (a test "
        "compares this file with the code). How to watch them, the rules and the alerts: "
        "[monitoring.md](monitoring.md).",
        "",
        "A histogram `X` is served as `X_bucket{le=…}`, `X_sum` and `X_count`. What the claim latency histograms "
        "`poolboy_claim_bind_seconds` and `poolboy_claim_ready_seconds` measure, and what they leave out: "
        "[monitoring.md](monitoring.md#claim-latency-poolboy_claim_bind_seconds-and-poolboy_claim_ready_seconds).",
    ]
    seen: set[str] = set()
    for module in metric_modules():
        docs = [doc for doc in metrics_of(module) if doc.name not in seen]
        if not docs:
            continue
        seen.update(doc.name for doc in docs)
        path = module.__name__.replace(".", "/") + ".py"
        lines += ["", f"## `{path}`", "", _markdown(_summary(module)), "", "| name | type | labels | meaning |",
                  "|---|---|---|---|", *(_row(doc) for doc in docs)]
    lines += ["", "## Old names", "",
              "Renamed families are served under their old names as well, for one release, so dashboards and "
              "alerts written for those keep working while they move:", "",
              "| name | old name |", "|---|---|",
              *(f"| `{new}{suffix}` | `{old}{suffix}` |" for new, old in DEPRECATED_NAMES.items()
                for suffix in ["_total" if f"{new}_total" in seen else ""]), ""]
    return "\n".join(lines)


def _summary(module: ModuleType) -> str:
    """The first paragraph of the module's docstring, on one line."""
    paragraph = (module.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stack.metrics_reference", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {TARGET.relative_to(ROOT)} is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is out of date: run python -m stack.metrics_reference",
                  file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

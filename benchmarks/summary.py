"""The concise human summary of a ``claims.py`` report: one table of the bursts, one of memory, one cache line.

Printed on stderr after the JSON document's figures are known; it only reads the document, so it can also be run
on a saved one: ``python -m benchmarks.summary results.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: column title -> (aggregate name, or a path into the summary)
COLUMNS: dict[str, tuple[str, ...]] = {
    "all bound s": ("all_bound_s", "median"),
    "all gone s": ("all_gone_s", "median"),
    "claims/s": ("throughput_per_s", "median"),
    "scaling": ("scaling", "throughput_ratio"),
    "bound p99 s": ("bound_p99_s", "median"),
    "API/claim w/ (w/o)": ("api_per_claim", "median"),
    "op CPU ms/claim w/ (w/o)": ("operator_cpu_ms_per_claim_with", "median"),
    "Redis cmds/claim w/ (w/o)": ("redis_commands_per_claim_with", "median"),
    "op PSS MiB": ("operator_pss_mib", "median"),
}
#: columns shown as "with (without)": the second path is the "without replenishment" figure
PAIRED = {"API/claim w/ (w/o)": ("api_per_claim_without", "median"),
          "op CPU ms/claim w/ (w/o)": ("operator_cpu_ms_per_claim_without", "median"),
          "Redis cmds/claim w/ (w/o)": ("redis_commands_per_claim_without", "median")}
SERIES = ("W4", "W6")
MODES = ("MEM", "CACHE", "IDLE", "STARTUP", "RTT")


def _get(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else str(value)
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"


def _cell(summary: dict[str, Any], title: str) -> str:
    text = _fmt(_get(summary, COLUMNS[title]))
    if title in PAIRED:
        text += f" ({_fmt(_get(summary, PAIRED[title]))})"
    return text


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])


def burst_rows(workloads: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, summary in workloads.items():
        if name in MODES:
            continue
        entries = summary.items() if name in SERIES else [("", summary)]
        for workers, entry in entries:
            label = f"{name} {workers}w" if workers else name
            rows.append([label, *(_cell(entry, title) for title in COLUMNS)])
    return rows


def memory_rows(memory: dict[str, Any]) -> list[list[str]]:
    rows = []
    for point in ("idle_at_start", "idle_after_w1"):
        figures = memory.get(point) or {}
        components = figures.get("components") or {}
        cells = [f"{name} {_fmt(c.get('pss_mib'))}" for name, c in components.items()]
        rows.append([point, _fmt(figures.get("operator_pss_mib")), _fmt(figures.get("redis_used_memory_mib")),
                     ", ".join(cells)])
    return rows


def render(workloads: dict[str, Any]) -> str:
    parts = []
    rows = burst_rows(workloads)
    if rows:
        parts.append(table(["workload", *COLUMNS], rows))
    if "MEM" in workloads:
        memory = workloads["MEM"]
        parts.append(f"MEM ({memory.get('workers')} worker(s) x {memory.get('concurrency')} {memory.get('pool')}, "
                     f"PSS MiB; operator = watcher + workers + beat)")
        parts.append(table(["point", "operator", "redis used", "per component (tree)"], memory_rows(memory)))
    if "CACHE" in workloads:
        cache = workloads["CACHE"]
        parts.append(f"CACHE: {cache.get('objects_added')} objects cached under {cache['cache_after']['prefix']}: "
                     f"{_fmt(cache.get('cache_mib_per_10k_objects'))} MiB per 10 000 by their keys, "
                     f"{_fmt(cache.get('used_memory_mib_per_10k_objects'))} MiB per 10 000 by used_memory")
    if "IDLE" in workloads:
        idle = workloads["IDLE"]
        parts.append(f"IDLE: {idle.get('claims')} claims at rest for {idle.get('seconds')} s: operator CPU "
                     f"{_fmt(idle.get('operator_cpu_s'))} s ({_fmt(idle.get('operator_cpu_s_per_minute'))} s/min), "
                     f"{_fmt(idle.get('requests_per_s'))} API requests/s, "
                     f"{_fmt(idle.get('redis_commands_per_s'))} Redis commands/s")
    for workers, startup in (workloads.get("STARTUP") or {}).items():
        parts.append(f"STARTUP {workers} workers: ready in {_fmt(startup.get('ready_s'))} s; components "
                     f"{startup.get('components_ready_s', '-')}")
    if "RTT" in workloads:
        rtt = workloads["RTT"]
        parts.append(f"RTT: {rtt.get('commands')} Redis commands, {_fmt(_get(rtt, ('critical_path', 'round_trips')))}"
                     f" round trips between create and bound ({rtt.get('by_purpose')})")
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(render(json.loads(Path(sys.argv[1]).read_text())["workloads"]))

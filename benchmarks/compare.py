"""Project / upstream ratios from one interleaved series (``claims.py --systems project,upstream``).

Absolute times on this kind of machine vary by 1.6x from day to day; ratios measured in one series, each
system run in turn, carry over. For every figure the table gives both systems' medians, the ratio of the medians
and the ratio of the minimums (the least disturbed runs). Series workloads (W4, W6) run upstream once, at the
first worker count (it is one process): every project worker count is compared with that run.
"""

from __future__ import annotations

from typing import Any

#: (label, path to a {"median", "min"} figure in a workload's summary), by workload
BURST = (
    ("all bound s", ("all_bound_s",)),
    ("create->bound p50 s", ("bound_p50_s",)),
    ("create->bound p99 s", ("bound_p99_s",)),
    ("operator CPU s, bind path only", ("operator_cpu_s_without",)),
    ("operator CPU s, incl. replenishment", ("operator_cpu_s_with",)),
    ("operator CPU s, replenishment", ("operator_cpu_s_replenishment",)),
    ("API requests/claim, bind path", ("api_per_claim_without",)),
    ("API requests/claim, incl. replenishment", ("api_per_claim_with",)),
    ("Redis commands/claim, incl. replenishment", ("redis_commands_per_claim_with",)),
    ("operator PSS MiB at the end", ("operator_pss_mib",)),
    ("operator start-up s (API server running)", ("operator_ready_s",)),
    ("kube-apiserver + etcd CPU ms/claim, incl. replenishment", ("control_plane_cpu_ms_per_claim_with",)),
    ("requests the API server served/claim (all clients)", ("apiserver_requests_per_claim_with",)),
    ("etcd requests/claim", ("etcd_requests_per_claim_with",)),
)
DELETE = (
    ("all gone s", ("all_gone_s",)),
    ("delete->claim gone p50 s", ("gone_p50_s",)),
    ("delete->claim gone p99 s", ("gone_p99_s",)),
    ("operator CPU s until idle", ("operator_cpu_s_with",)),
    ("API requests/claim until idle", ("api_per_claim_with",)),
    ("Redis commands/claim until idle", ("redis_commands_per_claim_with",)),
    ("kube-apiserver + etcd CPU ms/claim until idle", ("control_plane_cpu_ms_per_claim_with",)),
)
FIGURES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "W1": BURST, "W2": BURST, "W3": BURST, "W4": BURST, "W6": BURST, "WD": DELETE,
    "STARTUP": (("ready s", ("startup_ready_s",)),),
    "MEM": (("operator PSS MiB idle", ("idle_pss_mib",)), ("operator PSS MiB peak during W1", ("peak_pss_mib",)),
            ("operator PSS MiB idle after W1", ("after_pss_mib",))),
    "IDLE": (("operator CPU s in the window", ("idle_operator_cpu_s",)),
             ("API requests/s", ("idle_requests_per_s",))),
}
SERIES = ("W4", "W6", "STARTUP")


def _get(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return round(a / b, 3)
    return None


def _entries(name: str, summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Series workloads hold one summary per worker count; others are one summary (key "")."""
    if name in SERIES:
        return {key: value for key, value in summary.items() if isinstance(value, dict)}
    return {"": summary}


def ratio_rows(project: dict[str, Any], upstream: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per workload (and worker count) and figure present in both systems' workloads."""
    rows = []
    for name, summary in project.items():
        if name not in upstream or name not in FIGURES:
            continue
        theirs_by_key = _entries(name, upstream[name])
        for key, ours in _entries(name, summary).items():
            theirs = theirs_by_key.get(key) or (next(iter(theirs_by_key.values())) if len(theirs_by_key) == 1
                                                else None)
            if theirs is None:
                continue
            for label, path in FIGURES[name]:
                mine, other = _get(ours, path) or {}, _get(theirs, path) or {}
                if mine.get("median") is None and other.get("median") is None:
                    continue
                rows.append({"workload": f"{name} {key}w" if key else name, "figure": label,
                             "project": mine.get("median"), "upstream": other.get("median"),
                             "ratio_median": _ratio(mine.get("median"), other.get("median")),
                             "ratio_min": _ratio(mine.get("min"), other.get("min"))})
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    from benchmarks.summary import _fmt, table

    header = ["workload", "figure", "project", "upstream", "ratio (median)", "ratio (min)"]
    return table(header, [[row["workload"], row["figure"], _fmt(row["project"]), _fmt(row["upstream"]),
                           _fmt(row["ratio_median"]), _fmt(row["ratio_min"])] for row in rows])

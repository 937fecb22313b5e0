"""Curves drawn from the JSON that ``claims.py --output`` writes, for people who would rather look than read.

    .venv/bin/python -m benchmarks.plots results/round20/*.json --out benchmarks/results/round20

draws whichever of these the files hold (each file may hold one or both systems):

* ``replicas.png``: W6, claims bound per second and create→bound p99 against worker processes, one line per system
  and injected API latency (upstream is one process: a flat line at its one figure);
* ``scale.png``: SCALE, per-claim costs against the number of claims in the cluster: the burst's operator CPU and
  API requests per claim, requests per second at rest per 10 000 objects, memory per 1 000 objects;
* ``create-to-bound.png``: W1 and W2, the distribution (CDF) of every claim's create→bound, per system.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any

Summaries = dict[str, dict[str, Any]]  # system -> workload -> summary (as claims.py writes it)


def load(path: Path) -> Summaries:
    """One file's workloads by system: ``systems`` (several systems) or ``workloads`` (one)."""
    document = json.loads(path.read_text())
    if "systems" in document:
        return dict(document["systems"])
    return {document.get("args", {}).get("system") or "project": document.get("workloads", {})}


def runs_of(summary: Any) -> list[dict[str, Any]]:
    return [run for run in (summary or {}).get("runs", []) if "error" not in run]


def replica_points(files: list[Summaries]) -> dict[tuple[str, float], list[tuple[int, float, float]]]:
    """(system, API latency ms) -> [(workers, median claims/s, median p99 s)], from every W6 series."""
    points: dict[tuple[str, float], dict[int, list[tuple[float, float]]]] = collections.defaultdict(
        lambda: collections.defaultdict(list))
    for systems in files:
        for system, workloads in systems.items():
            for workers, summary in (workloads.get("W6") or {}).items():
                for run in runs_of(summary):
                    if run.get("throughput_per_s"):
                        points[(system, float(run.get("api_latency_ms") or 0))][int(workers)].append(
                            (run["throughput_per_s"], run["create_to_bound"]["p99"]))
    return {key: [(w, _median([v[0] for v in values]), _median([v[1] for v in values]))
                  for w, values in sorted(by_workers.items())] for key, by_workers in points.items()}


def scale_points(files: list[Summaries]) -> dict[str, list[dict[str, float]]]:
    """system -> one point per SCALE run: claims in the cluster and its per-claim figures."""
    points: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    for systems in files:
        for system, workloads in systems.items():
            for run in runs_of(workloads.get("SCALE")):
                burst, rest = run.get("burst", {}), run.get("rest", {})
                points[system].append({
                    "claims": run["claims"],
                    "cpu_ms_per_claim": burst.get("cpu_ms_per_claim", {}).get("with_replenishment", {}).get(
                        "operator"),
                    "api_per_claim": burst.get("api_requests_by_verb_resource", {}).get(
                        "with_replenishment", {}).get("total"),
                    "rest_requests_per_s_per_10k": rest.get("requests_per_s_per_10k_objects"),
                    "mib_per_1k_objects": rest.get("memory", {}).get("operator_incl_redis_mib_per_1k_objects"),
                })
    return {system: sorted(values, key=lambda p: p["claims"]) for system, values in points.items()}


def bound_samples(files: list[Summaries]) -> dict[tuple[str, str], list[float]]:
    """(system, W1|W2) -> every claim's create→bound over all runs."""
    samples: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for systems in files:
        for system, workloads in systems.items():
            for name in ("W1", "W2"):
                for run in runs_of(workloads.get(name)):
                    samples[(system, name)].extend(run.get("create_to_bound_samples") or [])
    return {key: sorted(values) for key, values in samples.items() if values}


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def draw_replicas(points: dict[tuple[str, float], list[tuple[int, float, float]]], out: Path) -> Path:
    import matplotlib.pyplot as plt

    figure, (rate, tail) = plt.subplots(1, 2, figsize=(11, 4.2))
    every_count = sorted({w for series in points.values() for w, _, _ in series})
    for (system, latency), series in sorted(points.items()):
        label = f"{system}, {latency:g} ms API latency"
        if system == "upstream":  # one process whatever the worker count: its one figure across the axis
            _, value, p99 = series[0]
            rate.plot(every_count, [value] * len(every_count), "--", label=label)
            tail.plot(every_count, [p99] * len(every_count), "--", label=label)
            continue
        rate.plot([w for w, _, _ in series], [v for _, v, _ in series], "o-", label=label)
        tail.plot([w for w, _, _ in series], [p for _, _, p in series], "o-", label=label)
    for axis, title in ((rate, "claims bound per second"), (tail, "create→bound p99 (s)")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(every_count, [str(w) for w in every_count])
        axis.set_xlabel("worker processes")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    rate.legend(fontsize=8)
    return _save(figure, out / "replicas.png")


def draw_scale(points: dict[str, list[dict[str, float]]], out: Path) -> Path:
    import matplotlib.pyplot as plt

    panels = (("cpu_ms_per_claim", "burst: operator CPU ms per claim"),
              ("api_per_claim", "burst: API requests per claim"),
              ("rest_requests_per_s_per_10k", "at rest: requests/s per 10 000 objects"),
              ("mib_per_1k_objects", "memory (incl. Redis) MiB per 1 000 objects"))
    figure, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for axis, (key, title) in zip(axes.flat, panels, strict=True):
        for system, series in sorted(points.items()):
            shown = [(p["claims"], p[key]) for p in series if p.get(key) is not None]
            if shown:
                axis.plot([c for c, _ in shown], [v for _, v in shown], "o-", label=system)
        axis.set_xlabel("claims in the cluster")
        axis.set_title(title)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    return _save(figure, out / "scale.png")


def draw_bound(samples: dict[tuple[str, str], list[float]], out: Path) -> Path:
    import matplotlib.pyplot as plt

    names = sorted({name for _, name in samples})
    figure, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2), squeeze=False)
    for axis, name in zip(axes[0], names, strict=True):
        for (system, workload), values in sorted(samples.items()):
            if workload == name:
                axis.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=system)
        axis.set_title(f"{name}: create→bound, every claim")
        axis.set_xlabel("seconds")
        axis.set_ylabel("fraction of claims bound")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    return _save(figure, out / "create-to-bound.png")


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return path


def draw(paths: list[Path], out: Path) -> list[Path]:
    """Every figure the files hold data for, into ``out``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    files = [load(path) for path in paths]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if replicas := replica_points(files):
        written.append(draw_replicas(replicas, out))
    if scale := scale_points(files):
        written.append(draw_scale(scale, out))
    if samples := bound_samples(files):
        written.append(draw_bound(samples, out))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="JSON written by claims.py --output")
    parser.add_argument("--out", type=Path, default=Path("."), help="directory for the PNG files")
    args = parser.parse_args()
    for path in draw(args.files, args.out):
        print(path)


if __name__ == "__main__":
    main()

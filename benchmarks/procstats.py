"""CPU seconds, RSS, peak RSS and PSS of the stack's components, each over its whole process tree.

A Celery worker is a parent plus prefork children and Redis/devcluster are plain subprocesses, so every figure is
summed over the tree rooted at the component's pid. CPU is reported as a delta between two snapshots (so start-up
and pool filling do not count towards a workload), peak RSS as the sum of each process's ``VmHWM`` (the kernel's
high-water mark since the process started): an upper bound of the tree's true peak, which is what capacity
planning needs. PSS (proportional set size: each shared page divided among the processes sharing it) is what a
tree really costs: a prefork child's copy-on-write pages inherited from its parent count once, not twice, so the
PSS of several components adds up to their true total where RSS would count shared pages again.
"""

from __future__ import annotations

import threading
from contextlib import suppress
from pathlib import Path

import psutil


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _hwm_kib(pid: int) -> int:
    """``VmHWM`` of one process in KiB (0 when it is gone or the field is missing)."""
    with suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def pss_bytes(pid: int) -> int:
    """PSS of the process tree (``/proc/<pid>/smaps_rollup`` through psutil); 0 for processes gone meanwhile."""
    total = 0
    for proc in _tree(pid):
        with suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += proc.memory_full_info().pss
    return total


def cpu_seconds(pid: int) -> float:
    total = 0.0
    for proc in _tree(pid):
        with suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def snapshot(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far per component (pass two snapshots to :func:`report`)."""
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def report(pids: dict[str, int], before: dict[str, float]) -> dict[str, dict[str, float]]:
    """Per component: CPU seconds since ``before``, current RSS, peak RSS and PSS (MiB) of the process tree."""
    result: dict[str, dict[str, float]] = {}
    for name, pid in pids.items():
        procs = _tree(pid)
        rss = 0
        for proc in procs:
            with suppress(psutil.NoSuchProcess):
                rss += proc.memory_info().rss
        peak = sum(_hwm_kib(p.pid) for p in procs) / 1024
        result[name] = {"cpu_s": round(cpu_seconds(pid) - before.get(name, 0.0), 2),
                        "rss_mib": round(rss / 2**20, 1), "peak_rss_mib": round(peak, 1),
                        "pss_mib": round(pss_bytes(pid) / 2**20, 1)}
    return result


def is_operator(component: str) -> bool:
    """The operator's own processes: watcher, workers, beat and the fork server they were forked from (not
    devcluster, Redis or Flower); for upstream Poolboy, its one Kopf process."""
    return component in ("watcher", "beat", "fork-server", "kopf") or component.startswith("worker")


def operator_sum(per_component: dict[str, dict[str, float]], key: str) -> float:
    """``key`` summed over the operator's components (see :func:`is_operator`)."""
    return round(sum(v.get(key, 0.0) for name, v in per_component.items() if is_operator(name)), 2)


class PeakPss:
    """The highest sum of the operator's PSS seen while running: a thread samples every ``interval`` s (reading
    ``smaps_rollup`` of every process costs a few ms, so not more often) until :meth:`stop`."""

    def __init__(self, pids: dict[str, int], interval: float = 0.5) -> None:
        self.pids = {name: pid for name, pid in pids.items() if is_operator(name)}
        self.interval = interval
        self.peak_bytes = 0
        self.per_component_at_peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PeakPss:
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            sizes = {name: pss_bytes(pid) for name, pid in self.pids.items()}
            if sum(sizes.values()) > self.peak_bytes:
                self.peak_bytes = sum(sizes.values())
                self.per_component_at_peak = {name: round(size / 2**20, 1) for name, size in sizes.items()}
            if self._stop.wait(self.interval):
                return

    def stop(self) -> dict[str, object]:
        self._stop.set()
        self._thread.join()
        return {"operator_pss_mib": round(self.peak_bytes / 2**20, 1), "components_pss_mib": self.per_component_at_peak}

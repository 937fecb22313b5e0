"""Sampling profiles of running components with py-spy, and a plain-text summary of where the time went.

``py-spy`` (``pip install py-spy``) attaches to a live process (``--subprocesses`` follows Celery's prefork
children) and writes collapsed stacks (``--format raw``: ``frame;frame;frame count`` per line). The summary ranks
functions by *inclusive* samples (the function or anything it called was on the CPU or waiting), which is how the
hot paths of a reconcile show up, and by *self* samples. ``--idle`` is left off, so a process blocked on a socket
is not sampled: the figures are CPU time, not wall time. Extra py-spy flags come from ``$POOLBOY_PYSPY_ARGS``
(e.g. ``--gil``: only the thread holding the GIL, i.e. Python code on the CPU).
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import subprocess
from pathlib import Path


class Recorder:
    """``Recorder(out_dir).start(name, pid)`` … ``.stop()``: one py-spy per component, stopped with SIGINT."""

    def __init__(self, out_dir: Path, rate: int = 200) -> None:
        self.out_dir = out_dir
        self.rate = rate
        self.running: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    @staticmethod
    def available() -> bool:
        return shutil.which("py-spy") is not None

    def start(self, name: str, pid: int) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        out = self.out_dir / f"{name}.txt"
        cmd = ["py-spy", "record", "--pid", str(pid), "--subprocesses", "--format", "raw", "--rate",
               str(self.rate), "--nonblocking", "--output", str(out),
               *os.environ.get("POOLBOY_PYSPY_ARGS", "").split()]
        process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.running.append((name, process, out))

    def stop(self) -> dict[str, Path]:
        outputs = {}
        for _, process, _ in self.running:
            process.send_signal(signal.SIGINT)
        for name, process, out in self.running:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
            if out.exists():
                outputs[name] = out
        self.running.clear()
        return outputs


def _frames(stack: str) -> list[str]:
    # py-spy raw frames look like "function (path/to/file.py:123)"; drop line numbers to aggregate per function.
    result = []
    for frame in stack.split(";"):
        head, _, rest = frame.partition(" (")
        path = rest.rsplit(":", 1)[0] if rest else ""
        result.append(f"{head} ({path.split('site-packages/')[-1]})" if path else head)
    return result


def summarise(path: Path, top: int = 25) -> dict[str, list[tuple[str, float]]]:
    """Top functions by inclusive and by self share of samples (0–100 %)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = _frames(stack)
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    if not total:
        return {"inclusive": [], "self": [], "samples": []}

    def share(counter: collections.Counter[str]) -> list[tuple[str, float]]:
        return [(name, round(100.0 * count / total, 1)) for name, count in counter.most_common(top)]

    return {"inclusive": share(inclusive), "self": share(own), "samples": [("total", float(total))]}

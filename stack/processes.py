"""Child processes of ``poolboy dev``: start them in their own session, stop them politely, then firmly.

Each run starts with fresh logs (:func:`rotate_logs` keeps the previous run's as ``<name>.log.1``), so a component
that dies is reported with its own last lines of *this* run (:class:`ComponentExited`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from devcluster.process import die_with_parent

ROOT = Path(__file__).resolve().parent.parent


class Child:
    """One component process (``poolboy <command> ...``) with its output in a log file."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = env
        self.log_path = log_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Child:
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        self.process = subprocess.Popen(
            [sys.executable, "-m", "stack.cli", *self.argv], stdout=log, stderr=subprocess.STDOUT,
            env=self.env, cwd=ROOT, start_new_session=True, preexec_fn=die_with_parent,
        )
        log.close()
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive:
            assert self.process is not None
            os.killpg(self.process.pid, sig)

    def stop(self, timeout: float = 15.0) -> None:
        if not self.alive:
            return
        assert self.process is not None
        self.signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.process.wait(10)

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def last_lines(self, count: int = 20) -> list[str]:
        """The last ``count`` lines of this component's log (its traceback, when it died of one)."""
        return self.tail(200 * count).splitlines()[-count:]


class ComponentExited(RuntimeError):
    """A component exited when it should run: its name, exit status, log file and last lines, for people."""

    def __init__(self, child: Child, when: str, lines: int = 20) -> None:
        self.child = child
        status = child.process.returncode if child.process is not None else None
        tail = "\n".join(f"  | {line}" for line in child.last_lines(lines)) or "  | (its log is empty)"
        super().__init__(f"{child.name} exited {when} (exit status {status}); "
                         f"last lines of {child.log_path}:\n{tail}")


def rotate_logs(log_dir: Path) -> None:
    """Move every ``*.log`` of ``log_dir`` to ``*.log.1`` (replacing the one before): each run starts fresh logs,
    and the previous run's stay beside them for comparison."""
    for log in log_dir.glob("*.log"):
        log.replace(log.with_name(log.name + ".1"))

"""Child processes of ``poolboy dev``: start them in their own session, stop them politely, then firmly.

Each run starts with fresh logs (:func:`rotate_logs` keeps the previous run's as ``<name>.log.1``), so a component
that dies is reported with its own last lines of *this* run (:class:`ComponentExited`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from procutil import ChildProcess
from stack import forked

ROOT = Path(__file__).resolve().parent.parent


class Child(ChildProcess):
    """One component process (``poolboy <command> ...``) with its output in ``<log_dir>/<name>.log``."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str], log_dir: Path) -> None:
        super().__init__([sys.executable, "-m", "stack.cli", *argv], log_dir / f"{name}.log", env=env, cwd=ROOT)
        self.name = name
        self.argv = list(argv)
        self.env: dict[str, str] = env

    def start(self) -> Child:
        """Fork it from the stack's fork server (:mod:`stack.forked`), or start it as a subprocess when it must
        not be forked (a worker on a monkey-patching pool)."""
        if not forked.forkable(self.argv):
            super().start()
            return self
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.process = forked.ForkedProcess(self.argv, self.cmdline, self.env, str(ROOT), str(self.log_path))
        return self

    def stop(self, timeout: float = 15.0) -> None:
        super().stop(timeout)


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

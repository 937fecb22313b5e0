"""Child processes of ``poolboy dev``: start them in their own session, stop them politely, then firmly."""

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

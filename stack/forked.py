"""Components forked from one process that has imported their libraries once (:mod:`stack.zygote`).

``poolboy dev`` runs a watcher, beat and N workers: N + 2 Python processes that import the same libraries. Each one
importing them on its own cost 0.6–0.8 s of CPU, so on a two-core machine start-up grew by about half a second per
worker, and N + 2 private copies of the same modules sat in memory. Forked from a server that has imported them
(:mod:`stack.preload`), the components share those pages copy-on-write and start with them loaded, as
``gunicorn --preload`` does for web workers.

:class:`ForkedProcess` gives the stack the part of :class:`subprocess.Popen` it uses (``pid``, ``poll``, ``wait``,
``returncode``, ``send_signal``, ``terminate``, ``kill``), so supervision, restarts and the chaos tests treat a
forked component and a subprocess alike. One server per stack process, started on first use (or early, by
:func:`warm_up`), and again if it dies.

Workers on the gevent or eventlet pool are not forked: those must patch the standard library before anything
imports it, and the server has.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from procutil import die_with_parent

#: the pools whose monkey-patching must precede every import: such workers run as plain subprocesses
PATCHING_POOLS = frozenset({"gevent", "eventlet"})
ROOT = Path(__file__).resolve().parent.parent


def forkable(argv: Sequence[str]) -> bool:
    """Whether ``poolboy <argv>`` may be forked: anything but a worker on a monkey-patching pool."""
    words = list(argv)
    return not any(words[i] in ("--pool", "-P") and words[i + 1] in PATCHING_POOLS for i in range(len(words) - 1))


class Zygote:
    """The stack's side of one fork server: ask it to fork, learn the exit codes of what it forked."""

    def __init__(self) -> None:
        # started from whichever thread asks first; die_with_parent ties it to that thread, so a long-lived one
        # (the stack's main thread, or warm_up's caller) should ask first
        self.process = subprocess.Popen(
            [sys.executable, "-m", "stack.zygote"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            cwd=ROOT, preexec_fn=die_with_parent, start_new_session=True)
        assert self.process.stdin is not None and self.process.stdout is not None
        self._requests: IO[bytes] = self.process.stdin
        self._lock = threading.Lock()
        self._pids: queue.Queue[int] = queue.Queue()
        self._exits: dict[int, int] = {}
        self._exited = threading.Condition()
        threading.Thread(target=self._read, args=(self.process.stdout,), name="zygote-replies", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def fork(self, request: dict[str, Any], timeout: float = 30.0) -> int:
        with self._lock:
            self._requests.write(json.dumps(request).encode() + b"\n")
            self._requests.flush()
            try:
                return self._pids.get(timeout=timeout)
            except queue.Empty:
                raise RuntimeError(f"the fork server did not fork {request['argv']} in {timeout} s") from None

    def exit_code(self, pid: int) -> int | None:
        """The component's exit code once it exited; if this server died meanwhile (and can no longer say), -9 for
        a component that is gone."""
        with self._exited:
            if pid in self._exits:
                return self._exits[pid]
        if not self.alive and not _exists(pid):
            return -signal.SIGKILL
        return None

    def wait(self, pid: int, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._exited:
            while pid not in self._exits:
                if not self.alive:
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._exited.wait(0.1 if left is None else min(left, 0.1))
        while (code := self.exit_code(pid)) is None and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.05)
        return code

    def _read(self, replies: IO[bytes]) -> None:
        for line in replies:
            message = json.loads(line)
            if "pid" in message:
                self._pids.put(message["pid"])
            else:
                with self._exited:
                    self._exits[message["exit"]] = message["code"]
                    self._exited.notify_all()
        with self._exited:
            self._exited.notify_all()


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def zygote() -> Zygote:
    """The fork server of this process, started (again) when there is none alive."""
    global _zygote
    with _zygote_lock:
        if _zygote is None or not _zygote.alive:
            _zygote = Zygote()
        return _zygote


def warm_up() -> None:
    """Start the fork server now, so that it imports the preload list while the stack starts devcluster."""
    zygote()


class ForkedProcess:
    """``poolboy <argv>`` forked by the fork server, seen as the :class:`subprocess.Popen` the stack expects."""

    def __init__(self, argv: Sequence[str], cmdline: Sequence[str], env: dict[str, str], cwd: str,
                 log_path: str) -> None:
        self.args = list(cmdline)
        self._server = zygote()
        self.pid: int = self._server.fork({"argv": list(argv), "cmdline": self.args, "env": env, "cwd": cwd,
                                           "log": log_path})
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server.wait(self.pid, timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

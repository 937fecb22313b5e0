"""Components forked from one process that has imported their libraries once (:mod:`stack.zygote`).

``poolboy dev`` runs a watcher, beat and N workers: N + 2 Python processes that import the same libraries. Each one
importing them on its own cost 0.6–0.8 s of CPU, so on a two-core machine start-up grew by about half a second per
worker, and N + 2 private copies of the same modules sat in memory. Forked from a server that has imported them
(:mod:`stack.preload`), the components share those pages copy-on-write and start with them loaded, as
``gunicorn --preload`` does for web workers.

:class:`ForkedProcess` gives the stack the part of :class:`subprocess.Popen` it uses (``pid``, ``poll``, ``wait``,
``returncode``, ``send_signal``, ``terminate``, ``kill``), so supervision, restarts and the chaos tests treat a
forked component and a subprocess alike: the component is this process's own child (the server hands it over, see
:mod:`stack.zygote`), in a session of its own, with the command line it would have as a subprocess. One server per
stack process, started on first use (or early, by :func:`warm_up`), and again if it dies; its death takes no
component with it. The stack stops it once the components it starts are forked (:func:`release`).

Workers on the gevent or eventlet pool are not forked: those must patch the standard library before anything
imports it, and the server has.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from procutil import PR_SET_CHILD_SUBREAPER, prctl, spawn

#: the pools whose monkey-patching must precede every import: such workers run as plain subprocesses
PATCHING_POOLS = frozenset({"gevent", "eventlet"})
ROOT = Path(__file__).resolve().parent.parent


def forkable(argv: Sequence[str]) -> bool:
    """Whether ``poolboy <argv>`` may be forked: on Linux (the hand-over needs ``prctl``), anything but a worker on
    a monkey-patching pool."""
    words = list(argv)
    return sys.platform == "linux" and \
        not any(words[i] in ("--pool", "-P") and words[i + 1] in PATCHING_POOLS for i in range(len(words) - 1))


class Zygote:
    """The stack's side of one fork server: ask it to fork a component, which becomes this process's child."""

    def __init__(self) -> None:
        # adopt the orphans among this process's descendants: a component forked by the server's middle child
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.process = spawn([sys.executable, "-m", "stack.zygote"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             cwd=ROOT, start_new_session=True)
        assert self.process.stdin is not None and self.process.stdout is not None
        self._requests: IO[bytes] = self.process.stdin
        self._replies: IO[bytes] = self.process.stdout
        self._lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self, timeout: float) -> None:
        """End the server: its requests end (it leaves its loop and exits), or it is killed after ``timeout``."""
        with self._lock:
            with contextlib.suppress(OSError):
                self._requests.close()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self._replies.close()

    def fork(self, request: dict[str, Any]) -> int:
        with self._lock:
            self._requests.write(json.dumps({**request, "parent": os.getpid()}).encode() + b"\n")
            self._requests.flush()
            line = self._replies.readline()
        if not line:
            raise RuntimeError(f"the fork server exited before it forked {request['argv']}")
        reply = json.loads(line)
        if "pid" not in reply:
            raise RuntimeError(f"the fork server could not fork {request['argv']}: {reply.get('error')}")
        pid: int = reply["pid"]
        return pid


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def zygote() -> Zygote:
    """The fork server of this process, started (again) when there is none alive."""
    global _zygote
    with _zygote_lock:
        if _zygote is None or not _zygote.alive:
            _zygote = Zygote()
        return _zygote


def release(timeout: float = 5.0) -> None:
    """Stop this process's fork server, if one runs: the stack calls it once the components it started are forked.

    Why: an idle server is not free. Its pages are shared with the components only until they write to them (a
    reference count is a write), and then they are the server's alone: a stack of a watcher, one worker and beat
    measured 129 MiB PSS with the server and 110 MiB without it (the server's own share, 18 MiB, freed; the rest
    moves onto the components). A component started later (a restart) starts a server again (:func:`zygote`), which
    costs that component the libraries' import once more, as a subprocess would pay it.
    """
    global _zygote
    with _zygote_lock:
        server, _zygote = _zygote, None
    if server is not None:
        server.close(timeout)


def running() -> int | None:
    """The pid of this process's fork server, if one runs (the benchmarks count its memory as the operator's)."""
    return _zygote.process.pid if _zygote is not None and _zygote.alive else None


def warm_up() -> None:
    """Start the fork server now (from the stack's main thread), so that it imports the preload list while the
    stack starts devcluster (on Linux: elsewhere nothing is forked)."""
    if sys.platform == "linux":
        zygote()


class ForkedProcess:
    """``poolboy <argv>`` forked by the fork server, seen as the :class:`subprocess.Popen` the stack expects: it is
    this process's child, reaped with ``waitpid``."""

    def __init__(self, argv: Sequence[str], cmdline: Sequence[str], env: dict[str, str], cwd: str,
                 log_path: str) -> None:
        self.args = list(cmdline)
        self.pid: int = zygote().fork({"argv": list(argv), "cmdline": self.args, "env": env, "cwd": cwd,
                                       "log": log_path})
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone, its status unknown
                self.returncode = -signal.SIGKILL
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

"""One child-process helper for everything the project starts: redis-server, devcluster, the stack's components.

It belongs to no layer of the engine (``poolboy/``, ``workers/``, ``watcher/`` never import it): ``poolboy dev``,
the test fixtures and the benchmarks do. A child runs in a session of its own, with stdout and stderr in a log file,
so that it can be stopped as a group (SIGTERM, then SIGKILL for whatever is left, e.g. a worker's pool children)
and so that its last lines can be shown when it dies.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, Self

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36


class Process(Protocol):
    """The part of :class:`subprocess.Popen` a :class:`ChildProcess` uses (a forked component offers it too)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def terminate(self) -> None: ...


def prctl(option: int, value: int | bytes) -> None:
    """Linux ``prctl(option, value)``; OSError when it fails, AttributeError where libc has none."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, ctypes.c_char_p(value) if isinstance(value, bytes) else value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def die_with_parent() -> None:
    """``preexec_fn`` for helper subprocesses: SIGTERM when the process that started them dies, so a killed test
    run or ``poolboy dev`` never leaves orphaned servers behind (Linux ``prctl``; a no-op elsewhere). Linux sends
    it when the *thread* that forked the child ends: :class:`ChildProcess` forks from :func:`spawner`'s thread."""
    with contextlib.suppress(OSError, AttributeError):
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def spawner() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread this process starts children from. It lives as long as the process, so a child tied to its
    parent by :func:`die_with_parent` outlives whatever short-lived thread asked for it (a supervisor restarting a
    component from a request handler's thread) and dies only with the process."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="procutil-spawner")
        return _spawner


def _forget_spawner() -> None:
    """A forked child has no copy of its parent's spawner thread: it starts its own on first use."""
    global _spawner, _spawner_lock
    _spawner, _spawner_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_spawner)


def spawn(cmdline: Sequence[str], tie_to_parent: bool = True, **popen: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(cmdline, **popen)`` forked from :func:`spawner`'s thread, tied to this process by
    :func:`die_with_parent` unless ``tie_to_parent`` is false."""
    preexec = die_with_parent if tie_to_parent else None

    def fork() -> subprocess.Popen[Any]:
        return subprocess.Popen(list(cmdline), preexec_fn=preexec, **popen)

    return spawner().submit(fork).result()


#: where :func:`free_port` looks first: below Linux's default ephemeral range (32768-60999), whose ports the kernel
#: also hands to outgoing connections
LISTEN_RANGE = (20000, 32767)
_given: set[int] = set()
_given_lock = threading.Lock()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now, for a server that binds it a moment later, and never the same one twice
    in this process.

    Not the kernel's pick (``bind(0)``): that comes from the ephemeral range, and between this answer and the
    server's bind, any outgoing connection on the machine (a worker connecting to Redis, say) may be given the same
    port as its local end, and the server dies with "Address already in use". A port below the ephemeral range is
    only ever taken by another listener. The kernel's pick remains the fallback.
    """
    low, high = LISTEN_RANGE
    ephemeral_low, ephemeral_high = _ephemeral_range()
    candidates = [port for port in range(low, high + 1) if not ephemeral_low <= port <= ephemeral_high]
    with _given_lock:
        for port in random.sample(candidates, min(len(candidates), 64)):
            if port not in _given and bindable(host, port):
                _given.add(port)
                return port
        with socket.socket() as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        _given.add(port)
        return port


def bindable(host: str, port: int) -> bool:
    """Whether a listener could bind ``host:port`` now (with SO_REUSEADDR, as every server here binds: a TIME_WAIT
    connection does not count, a listener does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


class ChildProcess:
    """``cmdline`` as a child in its own session, its output appended to ``log_path``.

    ``term_group`` says who gets the polite SIGTERM: the whole group (a supervisor's components, which all shut
    down on it) or only the leader (a Celery worker, whose pool children must be left to their parent's warm
    shutdown). Whatever is left of the group after ``timeout`` gets SIGKILL. ``stdout_path`` keeps stdout apart
    from the log (stderr), for a child that announces something on stdout only (devcluster's URL).
    """

    def __init__(self, cmdline: Sequence[str], log_path: str | Path, *, env: Mapping[str, str] | None = None,
                 cwd: str | Path | None = None, term_group: bool = True, tie_to_parent: bool = True,
                 stdout_path: str | Path | None = None) -> None:
        self.cmdline = list(cmdline)
        self.log_path = Path(log_path)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.term_group = term_group
        self.tie_to_parent = tie_to_parent
        self.stdout_path = Path(stdout_path) if stdout_path else None
        self.process: Process | None = None
        self._log_offset = 0

    def start(self) -> ChildProcess:
        """Start the child; its log is appended to, and :meth:`output` reads only what this start wrote."""
        with contextlib.ExitStack() as files:
            log = files.enter_context(open(self.log_path, "ab"))
            self._log_offset = log.tell()
            stdout = files.enter_context(open(self.stdout_path, "wb")) if self.stdout_path else log
            self.process = spawn(self.cmdline, self.tie_to_parent, stdout=stdout,
                                 stderr=log if stdout is not log else subprocess.STDOUT, env=self.env, cwd=self.cwd,
                                 start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> None:
        """Return once ``ready()`` holds; stop the child and raise :class:`RuntimeError` with its last output if it
        exits first or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"{what}: exited with {self.process.returncode}; {self.log_path}:\n"
                                   f"{self.tail(4000)}")
            time.sleep(interval)
        self.stop()
        raise RuntimeError(f"{what}: not ready after {timeout} s; {self.log_path}:\n{self.tail(4000)}")

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the child's whole process group (parent and children), if any of it is left."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (to the group or the leader, see the class), up to ``timeout`` seconds for an exit, then SIGKILL
        to the group: leftovers, or a leader that ignored the SIGTERM."""
        if self.process is None:
            return
        if self.process.poll() is None:
            if self.term_group:
                self.signal(signal.SIGTERM)
            else:
                self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)
        self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)

    def output(self) -> str:
        """Everything the child wrote since it was started (not what earlier runs left in the same log)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, chars: int = 3000) -> str:
        return self.output()[-chars:]

    def last_lines(self, count: int = 20) -> list[str]:
        """The last ``count`` lines of the child's output (its traceback, when it died of one)."""
        return self.tail(200 * count).splitlines()[-count:]


class InTemporaryDirectory:
    """A ``with`` block around ``start()`` and ``stop()`` of something that keeps its files in ``self._tmp`` (a
    :class:`tempfile.TemporaryDirectory`): removed when the block ends, or when the start fails."""

    _tmp: tempfile.TemporaryDirectory[str]

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self._tmp.cleanup()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._tmp.cleanup()

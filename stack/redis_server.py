"""A real ``redis-server`` as a child process: persistence off, bound to 127.0.0.1 only. ``poolboy dev`` runs its
Redis with it, and the tests do (re-exported by :mod:`stack.testing`)."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

from procutil import ChildProcess, free_port


def answers_ping(port: int) -> bool:
    """A redis-server on ``port`` answers PING (with ``--requirepass``: up, but locked — up all the same)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


class RedisServer(ChildProcess):
    """``with RedisServer() as redis: redis.url`` — a private redis-server for one test session."""

    def __init__(self, port: int | None = None, startup_timeout: float = 10.0, args: list[str] | None = None) -> None:
        self.port = port or free_port()
        self.args = list(args or [])
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.startup_timeout = startup_timeout
        self._tmp = tempfile.TemporaryDirectory(prefix="redis-")
        super().__init__([], Path(self._tmp.name) / "redis.log", term_group=False)

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if not binary:
            raise RuntimeError("redis-server is not installed; run scripts/bootstrap.sh")
        self.cmdline = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                        "--dir", self._tmp.name, *self.args]
        super().start()
        self.wait_until(lambda: answers_ping(self.port), self.startup_timeout,
                        f"redis-server on port {self.port}")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._tmp.cleanup()

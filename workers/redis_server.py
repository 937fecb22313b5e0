"""A real ``redis-server`` as a subprocess: persistence off, bound to 127.0.0.1 only. ``poolboy dev`` runs its Redis
with it, and the tests do (re-exported by :mod:`workers.testing`)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from devcluster.process import die_with_parent

if TYPE_CHECKING:
    pass


def free_port() -> int:
    """A TCP port that is free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """``with RedisServer() as redis: redis.url`` — a private redis-server for one test session."""

    def __init__(self, port: int | None = None, startup_timeout: float = 10.0, args: list[str] | None = None) -> None:
        self.port = port or free_port()
        self.args = list(args or [])
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.startup_timeout = startup_timeout
        self._tmp = tempfile.TemporaryDirectory(prefix="redis-")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if not binary:
            raise RuntimeError("redis-server is not installed; run scripts/bootstrap.sh")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self._tmp.name, "--logfile", str(Path(self._tmp.name) / "redis.log"), *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith((b"+PONG", b"-NOAUTH")):  # up (with --requirepass: up, locked)
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._tmp.cleanup()

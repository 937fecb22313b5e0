"""Testing helpers shipped with the stack: a real ``redis-server``, real worker and beat subprocesses.

Tests never use fakes of Redis for anything but pure unit tests of scripts; this starts the real binary with
persistence off, bound to 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from procutil import ChildProcess, free_port
from stack.redis_server import RedisServer

if TYPE_CHECKING:
    import redis

__all__ = ["BeatProcess", "RedisServer", "SentinelCluster", "WorkerProcess", "free_port"]

ROOT = Path(__file__).resolve().parent.parent


class _ServiceProcess(ChildProcess):
    """A ``poolboy <command>`` subprocess in its own session: SIGTERM to its leader (a worker's warm shutdown), then
    SIGKILL to whatever is left of its process group."""

    command: str = ""

    def __init__(self, redis_url: str, args: list[str], env: dict[str, str] | None = None,
                 kubeconfig: str | Path | None = None, log_path: str | Path | None = None) -> None:
        self.redis_url = redis_url
        self.args = args
        full_env = {**os.environ, "POOLBOY_REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1", **(env or {})}
        if kubeconfig:
            full_env["KUBECONFIG"] = str(kubeconfig)
        self._tmp = tempfile.TemporaryDirectory(prefix=f"poolboy-{self.command}-")
        super().__init__([sys.executable, "-m", "stack.cli", self.command, *args],
                         Path(log_path) if log_path else Path(self._tmp.name) / f"{self.command}.log",
                         env=full_env, cwd=ROOT, term_group=False, tie_to_parent=False)
        self.env: dict[str, str] = full_env

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def launch(self) -> None:
        self.start()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (parent and pool children), e.g. to simulate node loss."""
        self.signal(sig)

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._tmp.cleanup()


class WorkerProcess(_ServiceProcess):
    """``with WorkerProcess(redis.url, ["claims"], 2) as worker:`` — a real ``poolboy worker``, ready when entered.

    ``reconcilers`` (``<module>:<attr>``) is the mapping of kind to reconciler the worker runs instead of the
    domain's (``poolboy worker --reconcilers``). Readiness is a remote-control ping to the worker's own node name,
    with a deadline.
    """

    command = "worker"

    def __init__(self, redis_url: str, queues: list[str] | tuple[str, ...] = ("claims",), concurrency: int = 2,
                 env: dict[str, str] | None = None, kubeconfig: str | Path | None = None, pool: str = "prefork",
                 startup_timeout: float = 30.0, log_path: str | Path | None = None,
                 reconcilers: str | None = None) -> None:
        self.node = f"test-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        self.startup_timeout = startup_timeout
        args = ["--queues", ",".join(queues), "--concurrency", str(concurrency), "--pool", pool,
                "--hostname", self.node, "--log-level", "INFO"]
        if reconcilers:
            args += ["--reconcilers", reconcilers]
        super().__init__(redis_url, args, env, kubeconfig, log_path)

    def __enter__(self) -> WorkerProcess:
        with contextlib.ExitStack() as on_failure:  # a worker that never answers is stopped, not left behind
            on_failure.callback(self.__exit__)
            self.launch()
            self.wait_ready()
            on_failure.pop_all()
        return self

    def wait_ready(self) -> None:
        from poolboy.settings import Settings
        from workers.broker import probe_app

        app = probe_app(Settings.from_env(self.env))
        try:
            deadline = time.monotonic() + self.startup_timeout
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"worker exited with {self.process.returncode}:\n{self.log()[-4000:]}")
                if app.control.ping(destination=[self.node], timeout=0.5):
                    return
            raise RuntimeError(f"worker {self.node} did not answer a ping:\n{self.log()[-4000:]}")
        finally:
            app.close()

    def pool_pids(self) -> list[int]:
        """PIDs of the pool children (from /proc), for killing one mid-run."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        return [int(p) for p in children.read_text().split()] if children.exists() else []


class BeatProcess(_ServiceProcess):
    """``with BeatProcess(redis.url, env={...}):`` — a real ``poolboy beat``, started when entered."""

    command = "beat"

    def __init__(self, redis_url: str, env: dict[str, str] | None = None, kubeconfig: str | Path | None = None,
                 log_path: str | Path | None = None) -> None:
        super().__init__(redis_url, ["--log-level", "INFO", "--max-interval", "0.5"], env, kubeconfig, log_path)

    def __enter__(self) -> BeatProcess:
        self.launch()
        return self


class SentinelCluster:
    """``with SentinelCluster() as ha: ha.url`` — one primary, one replica and three sentinels on loopback ports.

    The processes come from the distribution's packages (``redis-server``, ``redis-sentinel`` or, failing that,
    ``redis-server --sentinel``). Failure detection is fast (1 s) so a failover takes a few seconds.
    """

    def __init__(self, master: str = "mymaster", sentinels: int = 3, down_after_ms: int = 1000) -> None:
        self.master = master
        self.primary = RedisServer(args=["--appendonly", "no"])
        self.replica = RedisServer(args=["--replicaof", "127.0.0.1", str(self.primary.port)])
        self.sentinel_ports = [free_port() for _ in range(sentinels)]
        self.down_after_ms = down_after_ms
        self._tmp = tempfile.TemporaryDirectory(prefix="sentinels-")
        self.sentinels: list[ChildProcess] = []

    @property
    def url(self) -> str:
        return ";".join(f"sentinel://127.0.0.1:{port}" for port in self.sentinel_ports)

    def _sentinel_command(self, config: Path) -> list[str]:
        binary = shutil.which("redis-sentinel")
        if binary:
            return [binary, str(config)]
        server = shutil.which("redis-server")
        if not server:
            raise RuntimeError("redis-sentinel is not installed; run scripts/bootstrap.sh --all")
        return [server, str(config), "--sentinel"]

    def start(self) -> SentinelCluster:
        self.primary.start()
        self.replica.start()
        for index, port in enumerate(self.sentinel_ports):
            config = Path(self._tmp.name) / f"sentinel-{index}.conf"
            config.write_text("\n".join([
                f"port {port}", "bind 127.0.0.1", "daemonize no", f"dir {self._tmp.name}",
                f"logfile {self._tmp.name}/sentinel-{index}.log",
                f"sentinel monitor {self.master} 127.0.0.1 {self.primary.port} 2",
                f"sentinel down-after-milliseconds {self.master} {self.down_after_ms}",
                f"sentinel failover-timeout {self.master} 10000",
                f"sentinel parallel-syncs {self.master} 1", ""]))
            output = Path(self._tmp.name) / f"sentinel-{index}.out"
            self.sentinels.append(ChildProcess(self._sentinel_command(config), output).start())
        self.wait_ready()
        return self

    def sentinel_client(self, index: int = 0) -> redis.Redis:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.sentinel_ports[index], socket_timeout=1, decode_responses=True)

    def master_address(self) -> tuple[str, int] | None:
        for index in range(len(self.sentinel_ports)):
            try:
                address = self.sentinel_client(index).sentinel_get_master_addr_by_name(self.master)
            except Exception:
                continue
            if address:
                return address[0], int(address[1])
        return None

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Every sentinel knows the replica and the other sentinels: only then can they agree on a failover."""
        deadline = time.monotonic() + timeout
        others = len(self.sentinel_ports) - 1
        while time.monotonic() < deadline:
            try:
                if all(len(c.sentinel_slaves(self.master)) >= 1 and len(c.sentinel_sentinels(self.master)) >= others
                       for c in map(self.sentinel_client, range(len(self.sentinel_ports)))):
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"sentinels not ready after {timeout}s; logs in {self._tmp.name}")

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.signal(signal.SIGKILL)
            if sentinel.process is not None:
                sentinel.process.wait(5)
        self.sentinels.clear()
        self.replica.stop()
        self.primary.stop()

    def __enter__(self) -> SentinelCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.primary._tmp.cleanup()
        self.replica._tmp.cleanup()
        self._tmp.cleanup()

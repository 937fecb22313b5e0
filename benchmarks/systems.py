"""The two systems a benchmark can drive with the same client calls: the project and upstream Poolboy v1.17.3.

Both expose what :class:`benchmarks.harness.Bench` needs: ``kubeconfig``, ``cluster`` (devcluster's admin API:
request counters, injected faults), ``direct_redis_url`` (the project's Redis, bypassing any latency proxy; None
for upstream, which has no Redis) and ``pids()`` (component -> root pid of its process tree; the operator's
components are those :func:`benchmarks.procstats.is_operator` names: watcher, workers and beat for the project,
``kopf`` for upstream).

* :class:`ProjectStack` is :class:`stack.local.LocalStack` (what ``poolboy dev`` runs), optionally with its
  Redis behind :mod:`benchmarks.latency_proxy`.
* :class:`UpstreamStack` runs ``upstream_dev.py dev`` from ``$UPSTREAM_DEV_DIR`` (upstream's harness): devcluster with
  upstream's CRDs and upstream's Kopf operator, all-in-one, as one process; with ``cluster="real"`` it starts the
  real control plane (:mod:`controlplane`) first and runs upstream on it (``--use-current-context``).
* On the real control plane ``pids()`` also names ``kube-apiserver``, ``etcd`` and ``kube-controller-manager``, and
  ``cluster`` is the :class:`controlplane.ControlPlane` (its counters come from the audit log).
* :func:`time_startup` launches either system's ``dev`` command and times its ready line (and, for the project,
  each component's first ready log line).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from devcluster.process import DevCluster
from procutil import spawn
from stack import forked
from stack.local import LocalStack, StackOptions
from stack.redis_server import RedisServer

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("project", "upstream")
OPERATOR_NS = "poolboy"


# --- the project ---------------------------------------------------------------------------------------------------


class ProjectStack(LocalStack):
    """``LocalStack`` plus the benchmark's view of it; with ``redis_latency_ms`` every component reaches Redis
    through the latency proxy while the benchmark's own Redis client (counters) goes straight to it."""

    name = "project"

    def __init__(self, options: StackOptions, redis_latency_ms: float = 0.0) -> None:
        super().__init__(options)
        self.redis_latency_ms = redis_latency_ms
        self.direct_redis_url = ""
        self._real_redis: RedisServer | None = None
        self.proxy: ReadyProcess | None = None
        #: seconds from starting the operator's components to every one ready (the API server and Redis already up)
        self.ready_s = 0.0
        self._components_started = 0.0

    def _start_components(self) -> None:
        self._components_started = time.monotonic()
        super()._start_components()

    def start(self) -> ProjectStack:
        if self.redis_latency_ms and not self.options.redis_url:
            self._real_redis = RedisServer().start()
            self.proxy = ReadyProcess(
                [sys.executable, "-m", "benchmarks.latency_proxy", "--target",
                 f"127.0.0.1:{self._real_redis.port}", "--delay-ms", str(self.redis_latency_ms)],
                re.compile(r"listening on (\d+)"), self.log_dir / "latency-proxy.log").start(timeout=30)
            self.options.redis_url = f"redis://127.0.0.1:{self.proxy.match.group(1)}/0"
            self.direct_redis_url = self._real_redis.url
        super().start()
        self.ready_s = time.monotonic() - self._components_started
        self.direct_redis_url = self.direct_redis_url or self.redis_url
        return self

    def stop(self) -> None:
        super().stop()
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self._real_redis is not None:
            self._real_redis.stop()
            self._real_redis = None

    def pids(self) -> dict[str, int]:
        pids = cluster_pids(self.cluster)
        redis = self._real_redis or self.redis
        if redis and redis.process:
            pids["redis"] = redis.process.pid
        for child in self.children:
            if child.process and child.alive:
                pids[child.name] = child.process.pid
        server = forked.running()
        if server is not None:  # it holds the components' shared libraries: its memory is the operator's too
            pids["fork-server"] = server
        return pids


# --- upstream ------------------------------------------------------------------------------------------------------


def upstream_dir() -> Path:
    """``$UPSTREAM_DEV_DIR``, else ``shared/upstream`` beside the checkout or beside its parent (worktrees)."""
    if os.environ.get("UPSTREAM_DEV_DIR"):
        return Path(os.environ["UPSTREAM_DEV_DIR"])
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "upstream" / "upstream_dev.py").exists():
            return base / "shared" / "upstream"
    raise RuntimeError("upstream_dev.py not found: set UPSTREAM_DEV_DIR to the directory holding it")


def upstream_env() -> dict[str, str]:
    """The environment with ``UPSTREAM_POOLBOY`` and ``UPSTREAM_PYTHON`` (from ``setup.sh`` unless already set)."""
    env = dict(os.environ)
    if not (env.get("UPSTREAM_POOLBOY") and env.get("UPSTREAM_PYTHON")):
        out = subprocess.run([str(upstream_dir() / "setup.sh")], capture_output=True, text=True, check=True).stdout
        env.update(parse_assignments(out))
    return env


def parse_assignments(text: str) -> dict[str, str]:
    """``KEY=value`` lines (``setup.sh``'s output) as a dict."""
    return dict(line.split("=", 1) for line in text.splitlines() if re.match(r"^[A-Z_]+=", line))


def upstream_command(kubeconfig: Path, workers: int = 1, current_context: bool = False) -> list[str]:
    """``upstream_dev.py dev``; on a cluster of ours through :mod:`benchmarks.upstream_on_cluster`."""
    harness = str(upstream_dir() / "upstream_dev.py")
    launcher = ["-m", "benchmarks.upstream_on_cluster"] if current_context else [harness]
    return [sys.executable, *launcher, "dev", "--kubeconfig", str(kubeconfig), "--workers", str(workers),
            "--namespace", OPERATOR_NS, *(["--use-current-context"] if current_context else [])]


#: upstream_dev.py's ready line: ``api <url>`` of the devcluster it started, or ``cluster of <kubeconfig>``
UPSTREAM_READY = re.compile(r"upstream poolboy ready in (?P<kopf>[\d.]+)s.*(?:api (?P<api>http://\S+)|cluster of)")
UPSTREAM_PIDS = re.compile(r"upstream-dev: (devcluster|kopf) pid (\d+)")


class UpstreamStack:
    """Upstream Poolboy through ``upstream_dev.py``, on devcluster or (``cluster="real"``) on the real control plane;
    ``with UpstreamStack(latency) as s: ...``."""

    name = "upstream"

    def __init__(self, api_latency_ms: float = 0.0, log_dir: Path | None = None, cluster: str = "devcluster") -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="upstream-stack-")
        self.log_dir = Path(log_dir or self._tmp.name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = self.log_dir / "kubeconfig"
        self.api_latency_ms = api_latency_ms
        self.direct_redis_url: str | None = None
        self.kind = cluster
        self.cluster: Any = None
        self.process: ReadyProcess | None = None
        self.ready_s = 0.0

    def start(self) -> UpstreamStack:
        real = self.kind == "real"
        if real:  # upstream applies its own CRDs there; the latency, as for the project, is the fault proxy's
            from controlplane import ControlPlane

            self.cluster = ControlPlane(kubeconfig=self.kubeconfig, log_dir=self.log_dir / "control-plane",
                                        fault_proxy=bool(self.api_latency_ms)).start()
        try:
            self._launch("upstream-dev.log")
        except BaseException:
            self.stop()
            raise
        if not real:
            assert self.process is not None
            self.cluster = attached_cluster(self.process.match.group("api"), self.kubeconfig)
        if self.api_latency_ms:
            self.cluster.set_faults(latency_ms=self.api_latency_ms)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(grace=40)
            self.process = None
        if self.kind == "real" and self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    def __enter__(self) -> UpstreamStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._tmp.cleanup()

    def pids(self) -> dict[str, int]:
        assert self.process is not None
        found = {name: int(pid) for name, pid in UPSTREAM_PIDS.findall("".join(self.process.lines))}
        if self.kind == "real":
            return {**cluster_pids(self.cluster), **({"kopf": found["kopf"]} if "kopf" in found else {})}
        return {"devcluster": found["devcluster"], "kopf": found["kopf"]} if len(found) == 2 else found

    def restart_operator(self) -> float:
        """Stop Kopf and start it again on the same cluster (what a watcher restart is for the project); seconds
        until it is ready again. Only the real control plane outlives the harness that started it."""
        assert self.kind == "real", "restart_operator needs cluster='real'"
        if self.process is not None:
            self.process.stop(grace=40)
        self._launch("upstream-dev-restart.log")
        return self.ready_s

    def _launch(self, log_name: str) -> None:
        began = time.monotonic()
        self.process = ReadyProcess(upstream_command(self.kubeconfig, current_context=self.kind == "real"),
                                    UPSTREAM_READY, self.log_dir / log_name, env=upstream_env())
        self.process.start(timeout=300)
        self.ready_s = time.monotonic() - began


def cluster_pids(cluster: Any) -> dict[str, int]:
    """The API server's processes: devcluster's one, or the real control plane's components by name."""
    from controlplane import ControlPlane

    if isinstance(cluster, ControlPlane):
        return {name: child.process.pid for name, current, _ in cluster.processes()
                if (child := current()) is not None and child.process is not None}
    if cluster is not None and cluster.process:
        return {"devcluster": cluster.process.pid}
    return {}


def attached_cluster(url: str, kubeconfig: Path) -> DevCluster:
    """devcluster's admin API for a server someone else started (no process of ours)."""
    cluster = DevCluster(kubeconfig=kubeconfig)
    cluster.url = url.rstrip("/")
    return cluster


# --- a command that prints a ready line ----------------------------------------------------------------------------


@dataclass
class ReadyProcess:
    """A subprocess whose stdout is copied to ``log_path``; :meth:`start` returns once a line matches ``ready``
    (``match`` holds it) and records when (``ready_at``, wall clock)."""

    argv: list[str]
    ready: re.Pattern[str]
    log_path: Path
    env: dict[str, str] | None = None
    lines: list[str] = field(default_factory=list)
    match: Any = None
    launched_at: float = 0.0
    ready_at: float = 0.0
    process: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 120.0) -> ReadyProcess:
        self.launched_at = time.time()
        self.process = spawn(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                             env=self.env, stdin=subprocess.DEVNULL)
        found = threading.Event()
        log = open(self.log_path, "w")  # noqa: SIM115 - closed by the copying thread
        threading.Thread(target=self._copy, args=(log, found), daemon=True).start()
        if not found.wait(timeout) or self.match is None:
            self.stop()
            raise RuntimeError(f"{self.argv[:3]} not ready in {timeout} s:\n{''.join(self.lines)[-3000:]}")
        return self

    def _copy(self, log: IO[str], found: threading.Event) -> None:
        assert self.process is not None and self.process.stdout is not None
        with log:
            for line in self.process.stdout:
                log.write(line)
                log.flush()
                self.lines.append(line)
                if self.match is None and (match := self.ready.search(line)):
                    self.ready_at, self.match = time.time(), match
                    found.set()
        found.set()  # exited before ready

    def stop(self, grace: float = 30.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


# --- start-up ------------------------------------------------------------------------------------------------------


#: the first log line that says a project component is up (watcher: watches open; worker: consuming; beat: it
#: holds the scheduler lock and sends tasks)
COMPONENT_READY: dict[str, re.Pattern[str]] = {
    "watcher": re.compile(r": watching$"),
    "worker": re.compile(r"\S+@\S+ ready\.$"),
    "beat": re.compile(r"beat: Acquired lock"),
}
LOG_TIME = re.compile(r"^\[?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})")


def first_ready_time(lines: list[str], pattern: re.Pattern[str]) -> float | None:
    """Wall-clock time (epoch s, local time zone) of the first log line matching ``pattern``; the stack's logs
    start with ``2026-11-24 22:52:49,443`` (watcher) or ``[2026-11-24 22:52:50,978: INFO/…]`` (Celery)."""
    for line in lines:
        if pattern.search(line.rstrip()) and (stamp := LOG_TIME.match(line)):
            return datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return None


def component_ready_s(log_dir: Path, launched_at: float) -> dict[str, float | None]:
    """Seconds from launch to each project component's first ready line (None: never seen)."""
    result: dict[str, float | None] = {}
    for path in sorted(log_dir.glob("*.log")):
        name = path.stem
        pattern = COMPONENT_READY.get(name.split("-", 1)[0])
        if pattern is None:
            continue
        stamp = first_ready_time(path.read_text(errors="replace").splitlines(), pattern)
        result[name] = round(stamp - launched_at, 2) if stamp is not None else None
    return result


def time_startup(system: str, workers: int, concurrency: int, pool: str,
                 sampler: Callable[[ReadyProcess, Path], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Launch ``poolboy dev`` (no Flower: not the operator) or ``upstream_dev.py dev``; seconds to the ready line,
    and per project component; ``sampler`` may measure the running system before it is stopped."""
    with tempfile.TemporaryDirectory(prefix=f"startup-{system}-") as tmp:
        directory = Path(tmp)
        if system == "project":
            argv = [sys.executable, "-m", "stack.cli", "dev", "--kubeconfig", str(directory / "kubeconfig"),
                    "--workers", str(workers), "--concurrency", str(concurrency), "--pool", pool,
                    "--flower-port", "0", "--namespace", OPERATOR_NS, "--log-dir", str(directory / "logs")]
            process = ReadyProcess(argv, re.compile(r"poolboy dev ready"), directory / "dev.log")
        else:
            process = ReadyProcess(upstream_command(directory / "kubeconfig", workers), UPSTREAM_READY,
                                   directory / "dev.log", env=upstream_env())
        try:
            process.start(timeout=180)
            result: dict[str, Any] = {"system": system, "workers": workers, "concurrency": concurrency,
                                      "ready_s": round(process.ready_at - process.launched_at, 2)}
            if system == "project":
                result["components_ready_s"] = component_ready_s(directory / "logs", process.launched_at)
            else:  # upstream_dev.py times Kopf from its launch (after devcluster) to liveness and watches open
                result["components_ready_s"] = {"kopf (from its own launch)": float(process.match.group("kopf"))}
            if sampler is not None:
                result |= sampler(process, directory)
            return result
        finally:
            process.stop(grace=40)

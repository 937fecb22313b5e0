"""``poolboy dev`` as a newcomer meets it: a taken port is one line and exit status 1, metrics have one port per
component (also with ``POOLBOY_METRICS_PORT`` in the environment), each run starts fresh logs, devcluster's log
says it started, and a component that dies is reported with its own last lines."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from procutil import free_port
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


class Dev:
    """A real ``poolboy dev`` subprocess; its stdout and stderr lines are collected as they come."""

    def __init__(self, tmp: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.log_dir = tmp / "logs"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "stack.cli", "dev", "--kubeconfig", str(tmp / "kubeconfig"),
             "--log-dir", str(self.log_dir), *args],
            cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_line(self, needle: str, timeout: float = 90.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if needle in line:
                return line
        raise AssertionError(f"no line with {needle!r} from poolboy dev; it said:\n" + "\n".join(self.seen))

    def output(self) -> list[str]:
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.seen

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        return self.process.returncode


@pytest.fixture
def listening() -> Iterator[int]:
    """A port some other program holds (a listening socket on 127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


def test_a_taken_flower_port_is_one_line_and_exit_status_1(tmp_path: Path, listening: int) -> None:
    dev = Dev(tmp_path, "--flower-port", str(listening))
    try:
        assert dev.process.wait(60) == 1
    finally:
        dev.stop()
    output = [line for line in dev.output() if line.strip()]
    assert output == [f"poolboy dev: port {listening} (Flower) is already in use on 127.0.0.1; "
                      f"choose another with --flower-port (0 disables Flower)"]


def test_a_taken_metrics_port_names_the_component(tmp_path: Path, listening: int) -> None:
    dev = Dev(tmp_path, "--flower-port", "0", "--metrics-port", str(listening))
    try:
        assert dev.process.wait(60) == 1
    finally:
        dev.stop()
    assert dev.output() == [f"poolboy dev: port {listening} (watcher metrics) is already in use on 127.0.0.1; "
                            f"choose another with --metrics-port"]


def _metrics(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def test_metrics_per_component_fresh_logs_and_a_dead_component_reported(tmp_path: Path) -> None:
    base = free_port()
    while not all(_free(port) for port in (base, base + 1, base + 2)):
        base = free_port()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "beat.log").write_text("a line of the previous run\n")
    # the variable in the environment must not make two components bind one port
    dev = Dev(tmp_path, "--flower-port", "0", "--workers", "2", "--concurrency", "1",
              env={"POOLBOY_METRICS_PORT": str(base)})
    try:
        dev.wait_line("poolboy dev ready")
        urls = {}
        for _ in range(3):
            line = dev.wait_line("metrics of ", timeout=10)
            name, url = line.split("metrics of ", 1)[1].split(": ", 1)
            urls[name] = url
        assert urls == {"watcher": f"http://127.0.0.1:{base}/metrics",
                        "worker-0": f"http://127.0.0.1:{base + 1}/metrics",
                        "worker-1": f"http://127.0.0.1:{base + 2}/metrics"}
        assert "poolboy_watcher_leader" in _metrics(urls["watcher"])
        # the components are forked and the fork server gone: an idle one only holds memory
        assert not _fork_servers(dev.process.pid), "a fork server still runs after the ready line"
        for worker in ("worker-0", "worker-1"):
            assert "poolboy_celery_queue_length" in _metrics(urls[worker])

        # fresh logs: the previous run's beside this one's
        assert (log_dir / "beat.log.1").read_text() == "a line of the previous run\n"
        assert "previous run" not in (log_dir / "beat.log").read_text()
        assert "devcluster serving http://127.0.0.1:" in (log_dir / "devcluster.log").read_text()

        # a component that dies is reported with its own last lines, and started again
        beat = _child(dev.process.pid, " beat")
        wait_for(lambda: "beat" in (log_dir / "beat.log").read_text(), timeout=30, message="beat to log its start")
        last_beat_line = (log_dir / "beat.log").read_text().splitlines()[-1]
        beat.send_signal(signal.SIGKILL)
        dev.wait_line("beat exited (status -9, last log line: ", timeout=30)
        wait_for(lambda: any(line == f"  | {last_beat_line}" for line in dev.output()), timeout=10,
                 message=f"beat's last lines under the announcement: {dev.output()}")
        wait_for(lambda: any(" beat" in " ".join(p.cmdline()) and p.pid != beat.pid
                             for p in psutil.Process(dev.process.pid).children()), timeout=30, message="beat restarted")
        assert dev.process.poll() is None, "poolboy dev keeps running"
        wait_for(lambda: not _fork_servers(dev.process.pid), timeout=10,
                 message="the fork server the restart started is gone again")
    finally:
        dev.stop()


def _free(port: int) -> bool:
    from stack.ports import is_free

    return is_free(port)


def _fork_servers(pid: int) -> list[psutil.Process]:
    """The fork servers among the live children of ``poolboy dev`` (``python -m stack.zygote``)."""
    servers = []
    for child in psutil.Process(pid).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "stack.zygote" in " ".join(child.cmdline()):
                servers.append(child)
        except psutil.NoSuchProcess:  # exited meanwhile
            continue
    return servers


def _child(pid: int, marker: str) -> psutil.Process:
    """The child of ``poolboy dev`` whose command line contains ``marker`` (e.g. ``" beat"``)."""
    return next(p for p in psutil.Process(pid).children() if marker in " ".join(p.cmdline()))


def test_devcluster_on_a_taken_port_says_so_in_one_line(tmp_path: Path, listening: int) -> None:
    result = subprocess.run([sys.executable, "-m", "devcluster", "--port", str(listening),
                             "--kubeconfig", str(tmp_path / "kubeconfig")],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"devcluster: cannot listen on 127.0.0.1:{listening}: Address already in use"]


def test_devcluster_logs_start_up_always_and_requests_at_debug(tmp_path: Path) -> None:
    from devcluster.process import DevCluster

    for level, logs_requests in (("INFO", False), ("DEBUG", True)):
        log_path = tmp_path / f"devcluster-{level}.log"
        with DevCluster(log_path=log_path, extra_args=["--log-level", level]) as cluster:
            cluster.request("GET", "/api/v1/namespaces/default")
        text = log_path.read_text()
        assert f"devcluster serving {cluster.url} " in text
        # only the announcement on stdout says "ready at <url>": wrappers that merge stdout and stderr (the upstream
        # stand-in) take the URL from the first such line
        assert "ready at" not in text, text
        assert ("GET /api/v1/namespaces/default" in text) is logs_requests, text

"""Testing helpers shipped with devcluster: start a real devcluster subprocess and talk to it.

Used by the pytest fixtures in ``tests/``, by the benchmarks and by ``poolboy dev``. The server is a separate
process (never in-thread) so that tests exercise real HTTP, real chunked watch streams and real concurrency.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

READY_PATTERN = re.compile(r"(http://127\.0\.0\.1:\d+)")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CRDS = ROOT / "helm" / "crds"


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """``preexec_fn`` for helper subprocesses: SIGTERM when the process that started them dies, so a killed test
    run or ``poolboy dev`` never leaves orphaned servers behind (Linux ``prctl``; a no-op elsewhere). Start them
    from a long-lived thread: the signal follows the death of the forking thread."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class DevCluster:
    """A devcluster subprocess on a free loopback port, with a kubeconfig pointing at it.

    ``with DevCluster(crds=[...]) as cluster: cluster.url, cluster.kubeconfig``.
    """

    def __init__(
        self,
        crds: list[str | Path] | None = None,
        kubeconfig: str | Path | None = None,
        extra_args: list[str] | None = None,
        startup_timeout: float = 30.0,
        log_path: str | Path | None = None,
        port: int = 0,
    ) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="devcluster-")
        self.kubeconfig = Path(kubeconfig) if kubeconfig else Path(self._tmp.name) / "kubeconfig"
        self.crds = [Path(c) for c in (crds or [])]
        self.extra_args = list(extra_args or [])
        self.startup_timeout = startup_timeout
        self.port = port
        self.log_path = Path(log_path) if log_path else Path(self._tmp.name) / "devcluster.log"
        self.url: str = ""
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> DevCluster:
        cmd = [sys.executable, "-m", "devcluster", "--port", str(self.port), "--kubeconfig", str(self.kubeconfig)]
        for crd in self.crds:
            cmd += ["--crds", str(crd)]
        cmd += self.extra_args
        log = open(self.log_path, "w")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=die_with_parent,
        )
        self.url = self._wait_ready(log)
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _wait_ready(self, log: Any) -> str:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                if self.process.poll() is not None:
                    break
                continue
            match = READY_PATTERN.search(line)
            if match:
                return match.group(1)
        self.stop()
        log.flush()
        raise RuntimeError(f"devcluster did not become ready; {self.log_path}:\n{self.log_path.read_text()[-4000:]}")

    def _drain(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for _ in self.process.stdout:
            pass

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)

    def __enter__(self) -> DevCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._tmp.cleanup()

    # --- conveniences for tests and benchmarks -------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """A raw JSON request to the server (admin endpoints, or API paths without a client)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def api_client(self) -> Any:
        """An official ``kubernetes`` ApiClient configured from this cluster's kubeconfig."""
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=configuration)
        return client.ApiClient(configuration)

    # --- admin API (see devcluster/README.md) ---------------------------------------------------------------

    def counters(self) -> dict[str, Any]:
        """Request counts: ``{"total", "by_verb", "by_resource", "counts": {verb: {resource: {ns: n}}}, "items",
        "unserved": {"total", "by_path"}}``."""
        return self.request("GET", "/_devcluster/counters")

    def reset_counters(self) -> None:
        self.request("POST", "/_devcluster/counters/reset")

    def set_faults(self, error_rate: float = 0.0, codes: list[int] | None = None, retry_after: int | None = None,
                   latency_ms: float = 0.0, verbs: list[str] | None = None, kinds: list[str] | None = None,
                   include_watch: bool = False) -> dict[str, Any]:
        """Inject faults into API requests (never into ``/_devcluster/*`` or discovery)."""
        body: dict[str, Any] = {"error_rate": error_rate, "codes": codes or [500], "retry_after": retry_after,
                                "latency_ms": latency_ms, "include_watch": include_watch}
        if verbs:
            body["verbs"] = verbs
        if kinds:
            body["kinds"] = kinds
        return self.request("PUT", "/_devcluster/faults", body)

    def clear_faults(self) -> None:
        self.request("PUT", "/_devcluster/faults", {})

    def set_history(self, size: int) -> dict[str, Any]:
        """Shrink or grow the watch event history (older resourceVersions then give 410 Expired)."""
        return self.request("PUT", "/_devcluster/history", {"size": size})

"""Testing helpers shipped with devcluster: start a real devcluster subprocess and talk to it.

Used by the pytest fixtures in ``tests/``, by the benchmarks and by ``poolboy dev``. The server is a separate
process (never in-thread) so that tests exercise real HTTP, real chunked watch streams and real concurrency.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from devcluster.faults import Faults
from procutil import ChildProcess, die_with_parent

READY_PATTERN = re.compile(r"devcluster ready at (http://127\.0\.0\.1:\d+)")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CRDS = ROOT / "helm" / "crds"

__all__ = ["DEFAULT_CRDS", "READY_PATTERN", "DevCluster", "die_with_parent"]


class DevCluster(ChildProcess):
    """A devcluster subprocess on a free loopback port, with a kubeconfig pointing at it.

    ``with DevCluster(crds=[...]) as cluster: cluster.url, cluster.kubeconfig``. The server prints its URL when it
    listens, on stdout (its log is stderr); that line is the sign it is ready.
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
        self.url: str = ""
        super().__init__([], Path(log_path) if log_path else Path(self._tmp.name) / "devcluster.log",
                         env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=ROOT,
                         stdout_path=Path(self._tmp.name) / "devcluster.stdout")

    def start(self) -> DevCluster:
        cmd = [sys.executable, "-m", "devcluster", "--port", str(self.port), "--kubeconfig", str(self.kubeconfig)]
        for crd in self.crds:
            cmd += ["--crds", str(crd)]
        self.cmdline = cmd + self.extra_args
        super().start()
        self.wait_until(self._found_url, self.startup_timeout, "devcluster")
        return self

    def _found_url(self) -> bool:
        assert self.stdout_path is not None
        match = READY_PATTERN.search(self.stdout_path.read_text(errors="replace"))
        if match:
            self.url = match.group(1)
        return match is not None

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
                   include_watch: bool = False, after_commit: bool = False) -> dict[str, Any]:
        """Inject faults into API requests (never into ``/_devcluster/*`` or discovery)."""
        faults = Faults(error_rate, codes or [500], retry_after, latency_ms, verbs or None, kinds or None,
                        include_watch, after_commit)
        return dict(self.request("PUT", "/_devcluster/faults", faults.to_json()))

    def clear_faults(self) -> None:
        self.request("PUT", "/_devcluster/faults", {})

    def set_history(self, size: int) -> dict[str, Any]:
        """Shrink or grow the watch event history (older resourceVersions then give 410 Expired)."""
        return self.request("PUT", "/_devcluster/history", {"size": size})

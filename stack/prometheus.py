"""Prometheus beside ``poolboy dev``: the ``prometheus`` binary (Debian's package) on 127.0.0.1, scraping every
component that serves metrics and Flower, with Poolboy's recording and alerting rules loaded from the file the chart
ships (``helm/files/prometheus-rules.yaml``).

Each target carries the labels the chart's ServiceMonitor gives it in a cluster (``namespace``, the operator's, and
``component``), so the rules and the dashboard's queries read the same here as there. Its configuration and data live
in one directory (``.poolboy-dev/prometheus`` for ``poolboy dev``), its data fresh each run.
"""

from __future__ import annotations

import shutil
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from procutil import ChildProcess
from stack import ports

RULES = Path(__file__).resolve().parent.parent / "helm" / "files" / "prometheus-rules.yaml"


class PrometheusUnavailable(RuntimeError):
    """Prometheus cannot run here, or did not become ready; the message says why in a line or a few."""


def binary() -> str:
    """The ``prometheus`` binary on PATH."""
    found = shutil.which("prometheus")
    if not found:
        raise PrometheusUnavailable("prometheus is not installed (scripts/bootstrap.sh installs Debian's package); "
                                    "install it or leave out --prometheus-port")
    return found


def scrape_config(targets: Mapping[str, str], namespace: str, interval: float) -> dict[str, Any]:
    """Prometheus' configuration: one job per kind of component (``worker-0`` and ``worker-1`` are jobs ``worker``),
    ``targets`` mapping each component to its metrics URL."""
    jobs: dict[str, list[dict[str, Any]]] = {}
    for component, url in targets.items():
        parts = urlsplit(url)
        jobs.setdefault(component.split("-")[0], []).append(
            {"targets": [parts.netloc], "labels": {"namespace": namespace, "component": component}})
    every = f"{interval:g}s"
    return {
        "global": {"scrape_interval": every, "evaluation_interval": every},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": job, "metrics_path": "/metrics", "static_configs": static}
                           for job, static in jobs.items()],
    }


class Prometheus(ChildProcess):
    """``Prometheus(port, directory, log_path, targets, namespace).start()``; :attr:`url` is its web UI and API."""

    def __init__(self, port: int, directory: Path, log_path: Path, targets: Mapping[str, str], namespace: str,
                 scrape_interval: float = 5.0, startup_timeout: float = 30.0) -> None:
        self.port = port
        self.url = f"http://{ports.LOOPBACK}:{port}"
        self.directory = directory
        self.config_path = directory / "prometheus.yml"
        self.targets = dict(targets)
        self.namespace = namespace
        self.scrape_interval = scrape_interval
        self.startup_timeout = startup_timeout
        super().__init__([], log_path)

    def start(self) -> Prometheus:
        return self.launch().wait_ready()

    def launch(self) -> Prometheus:
        """Start the process without waiting for it (it loads while the stack starts)."""
        data = self.directory / "data"
        if self.process is None:  # each run starts with no series of the last one's ports; a restart keeps them
            shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(yaml.safe_dump(scrape_config(self.targets, self.namespace,
                                                                  self.scrape_interval), sort_keys=False))
        self.cmdline = [binary(), f"--config.file={self.config_path}", f"--storage.tsdb.path={data}",
                        f"--web.listen-address={ports.LOOPBACK}:{self.port}", "--storage.tsdb.retention.time=1d"]
        super().start()
        return self

    def wait_ready(self) -> Prometheus:
        try:
            self.wait_until(self.is_ready, self.startup_timeout, f"prometheus on port {self.port}", interval=0.1)
        except RuntimeError as error:
            raise PrometheusUnavailable(str(error)) from None
        return self

    def is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1):
                return True
        except OSError:
            return False

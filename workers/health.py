"""``/healthz`` and ``/readyz`` of the watcher, the worker and beat, on a small HTTP server of their own.

Why a port of its own (``POOLBOY_HEALTH_PORT``) rather than the metrics port: the probes must work with metrics off,
and a NetworkPolicy can then open the metrics port to the monitoring namespace only while the kubelet reaches the
probes. The server binds ``POOLBOY_HEALTH_ADDRESS`` (loopback unless told otherwise; the chart sets ``0.0.0.0``).

* ``/healthz`` (liveness): the process's own loops make progress. Each check answers None (fine) or a reason; a
  failing condition must last ``POOLBOY_HEALTH_STALL_SECONDS`` before it counts, so a brief reconnect never gets a
  pod restarted. No network call: a liveness probe must not fail because a dependency is away.
* ``/readyz`` (readiness): the liveness checks plus the dependencies (Redis answers PING, the API answers
  ``/version``) and whatever the component adds (the watcher: informers synced, or standing by).

Each answer is plain text, one line per check (``ok name`` / ``failed name: reason``), 200 or 503.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from poolboy.settings import Settings

log = logging.getLogger(__name__)

#: a check: None when fine, else why not
Probe = Callable[[], "str | None"]


@dataclass
class Sustained:
    """A probe whose failure counts only once it has lasted ``grace`` seconds (None = fine)."""

    probe: Probe
    grace: float
    _failing_since: float | None = field(default=None, repr=False)

    def __call__(self) -> str | None:
        reason = self.probe()
        if reason is None:
            self._failing_since = None
            return None
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        lasted = now - self._failing_since
        return f"{reason} (for {lasted:.0f}s)" if lasted >= self.grace else None


@dataclass
class Checks:
    """The named checks of one process: ``live`` for /healthz, ``ready`` (added to ``live``) for /readyz."""

    live: dict[str, Probe] = field(default_factory=dict)
    ready: dict[str, Probe] = field(default_factory=dict)

    def run(self, path: str) -> tuple[bool, str]:
        probes = dict(self.live)
        if path == "/readyz":
            probes.update(self.ready)
        lines, ok = [], True
        for name, probe in probes.items():
            try:
                reason = probe()
            except Exception as error:  # a check that breaks is a failed check, never a crashed server
                reason = f"{type(error).__name__}: {error}"
            if reason is None:
                lines.append(f"ok {name}")
            else:
                ok = False
                lines.append(f"failed {name}: {reason}")
        return ok, "\n".join(lines) + "\n"


def serve(checks: Checks, port: int, address: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Serve /healthz and /readyz on a daemon thread; returns the server (``shutdown()`` stops it)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in ("/healthz", "/readyz"):
                self.send_error(404)
                return
            ok, text = checks.run(path)
            body = text.encode()
            self.send_response(200 if ok else 503)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # probes every few seconds: keep logs quiet
            log.debug(format, *args)

    server = ThreadingHTTPServer((address, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    log.info("health probes on http://%s:%d/healthz and /readyz", address, server.server_address[1])
    return server


# --- dependency checks (readiness) -------------------------------------------------------------------------------


def redis_probe(settings: Settings, timeout: float = 2.0) -> Probe:
    """PING on a connection of the probe's own (a shared client could be busy or broken in its own way), made by
    the one Redis client factory, so Sentinel, TLS and passwords apply to the probe too."""
    from engine import redis_client

    client = redis_client.client(settings, socket_timeout=timeout, socket_connect_timeout=timeout)

    def probe() -> str | None:
        try:
            client.ping()
        except Exception as error:
            return f"redis unreachable: {type(error).__name__}: {error}"
        return None

    return probe


def api_probe(kube: Any, timeout: float = 3.0) -> Probe:
    """GET /version (allowed to every authenticated identity, so it needs no RBAC grant), one attempt with a total
    deadline: the client's own retries would hold a probe three times as long."""
    import urllib3

    def probe() -> str | None:
        path = "/version"
        try:
            response = kube.api_client.rest_client.pool_manager.request(
                "GET", kube.api_client.configuration.host + path, headers=kube.transport.headers("GET", path, None),
                timeout=urllib3.Timeout(total=timeout), retries=False)
        except Exception as error:
            return f"API unreachable: {type(error).__name__}: {error}"
        return None if response.status == 200 else f"API answered {response.status} to GET {path}"

    return probe


# --- per-component wiring ------------------------------------------------------------------------------------------


def start_for(settings: Any, live: dict[str, Probe], ready: dict[str, Probe]) -> ThreadingHTTPServer | None:
    """Start the server when ``settings.health_port`` is set (0 = no probes)."""
    if not settings.health_port:
        return None
    return serve(Checks(live=live, ready=ready), settings.health_port, settings.health_address)


@dataclass(eq=False)  # hashable by identity: kombu keeps on_tick callbacks in a set
class LoopTicks:
    """Stamped on every pass of the worker's event loop (kombu's ``Hub.on_tick``; the hub polls at least every
    second even when idle), so a consumer whose loop stopped turning -- process alive, nothing consumed -- is seen."""

    last: float | None = None

    def __call__(self) -> None:
        self.last = time.monotonic()


def consumer_probe(consumer: Any, ticks: LoopTicks | None = None, max_silence: float = float("inf")) -> str | None:
    """The worker consumer consumes: it runs, holds a broker connection (it loses it when Redis goes away, and
    stays without one while it reconnects), has its task consumer, and its event loop turned within ``max_silence``
    seconds (when ``ticks`` are recorded: a worker without an event loop has none)."""
    from celery import bootsteps

    if consumer.blueprint is None or consumer.blueprint.state != bootsteps.RUN:
        return "consumer not running"
    connection = consumer.connection
    if connection is None or not connection.connected:
        return "no broker connection"
    if getattr(consumer, "task_consumer", None) is None:
        return "no task consumer"
    if ticks is not None and ticks.last is not None:
        silent = time.monotonic() - ticks.last
        if silent > max_silence:
            return f"event loop silent for {silent:.0f}s"
    return None


def beat_probe(service: Any, max_silence: float) -> Probe:
    """celery beat's scheduler loop (``Service._last_tick``, stamped after every pass) is still ticking, or beat
    waits for the scheduler's Redis lock: a standby replica is healthy (and ready to take over), not stuck."""

    def probe() -> str | None:
        from workers.compat import beat_last_tick, beat_on_standby

        last = beat_last_tick(service)
        silent = None if last is None else time.monotonic() - last
        if (silent is None or silent > max_silence) and beat_on_standby(service):
            return None
        if silent is None:
            return "no tick yet"
        return f"no tick for {silent:.0f}s" if silent > max_silence else None

    return probe

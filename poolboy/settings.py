"""All configuration, read once from the environment into one typed object.

Every process (watcher, worker, beat, ``poolboy dev``) builds its :class:`Settings` with
:meth:`Settings.from_env`; ``poolboy dev`` passes its own environment to every child so they agree.
Intervals are in seconds and can be set down to a few seconds for tests.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta
from functools import cache, cached_property
from typing import Any

from poolboy import DEFAULT_DOMAIN

log = logging.getLogger(__name__)


#: environment variables renamed, each field's old name: still read (when the new one is unset) for one release
DEPRECATED_ENV = {
    "workqueue_lease_seconds": "POOLBOY_GATE_LEASE_SECONDS",
    "workqueue_pending_ttl": "POOLBOY_GATE_PENDING_TTL",
    "workqueue_stale_seconds": "POOLBOY_GATE_STALE_SECONDS",
    "hold_seconds": "POOLBOY_BATCH_SECONDS",
}


@cache
def warn_deprecated(old_name: str, new_name: str) -> None:
    """Once per process and name: every component builds its settings several times (app, runtime, probes)."""
    log.warning("%s is deprecated and will be removed in the next release: set %s", old_name, new_name)


def _env(environ: Mapping[str, str], name: str, default: Any, cast: type) -> Any:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    if cast is bool:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return cast(raw)


@dataclass(frozen=True)
class Settings:
    #: operator domain D: API group, and prefix of every label, annotation and finalizer
    domain: str = DEFAULT_DOMAIN
    #: namespace of providers, handles, pools and scalings
    operator_namespace: str = "poolboy"
    #: Redis URL for the Celery broker, the work queue and the delaying queue: ``redis://``, ``rediss://`` (TLS) or
    #: ``sentinel://host:port;sentinel://host:port`` (see :mod:`engine.redis_client`)
    redis_url: str = "redis://127.0.0.1:6379/0"
    #: name of the master the sentinels monitor (with a ``sentinel://`` URL)
    redis_sentinel_master: str = "mymaster"
    #: password of the Redis servers when the URL carries none, and of the sentinels themselves
    redis_password: str = ""
    redis_sentinel_password: str = ""
    #: TLS with a ``sentinel://`` URL (``rediss://`` implies it): CA bundle, and a client certificate if required
    redis_tls: bool = False
    redis_tls_ca_file: str = ""
    redis_tls_cert_file: str = ""
    redis_tls_key_file: str = ""
    #: beat's Redis lock (celery-redbeat): a standby beat takes over at most this long after the active one died
    beat_lock_timeout: float = 30.0
    #: a worker told to stop (SIGTERM) lets running reconciles finish for this long, then hands them back to the
    #: work queue at once (lease released, key re-published); keep it below the pod's terminationGracePeriodSeconds
    worker_shutdown_grace: float = 20.0
    #: periodic sweeps of a kind (upstream's periodic re-reconciles, 60, 60, 10): each runs the objects that changed
    #: since their last successful run, owe a run or are due for their refresh (engine/sweeps.py)
    manage_claims_interval: float = 60.0
    manage_handles_interval: float = 60.0
    manage_pools_interval: float = 10.0
    #: a claim or handle whose provider's templates read the clock (now(), timestamp, datetime) runs again this often
    #: (through the delaying queue), so time-dependent templates are re-rendered; the periodic sweeps pass over
    #: unchanged objects (engine/sweeps.py)
    time_dependent_interval: float = 60.0
    #: resync from the API: the safety net that rebuilds Redis state; it runs the claims, handles and pools that
    #: changed since their last successful run, owe a run or are due for their refresh (engine/sweeps.py), and every
    #: provider and scaling
    resync_interval: float = 600.0
    #: a claim or handle runs again once its last successful run is this old (up to 10 % earlier), changed or not:
    #: controller-runtime's SyncPeriod, the net under a lost event of something it depends on
    sync_period: float = 36000.0
    #: how often every worker releases the delaying queue's due keys and expired leases into the work queue (the
    #: latest a retry, a deadline or a window's end runs after its time)
    sweep_due_interval: float = 0.25
    #: slow re-check of a permanent (user-fixable) error
    permanent_error_recheck: float = 300.0
    #: work queue lease on a running key, renewed every lease/3 by a heartbeat; also how long the key of a run whose
    #: process was killed (SIGKILL, node loss) waits before the lease reaper runs it again
    workqueue_lease_seconds: float = 10.0
    #: a pending work queue mark expires after this long (must exceed the worst queue wait)
    workqueue_pending_ttl: float = 900.0
    #: a queued pending mark older than this with no run active is presumed lost and re-published by the next
    #: add (an event or a periodic sweep). This bounds how long a key stays stuck when a worker dies holding a
    #: prefetched, unstarted message (which Redis only restores after the visibility timeout); a duplicate
    #: published during a longer backlog is absorbed by the work queue.
    workqueue_stale_seconds: float = 60.0
    #: most due keys (and expired leases) released per tick of a worker's pump
    sweep_due_batch: int = 1000
    #: reconcile task time limits (prefork pool): soft raises inside the task, hard kills the child
    reconcile_soft_time_limit: float = 120.0
    reconcile_time_limit: float = 150.0
    #: Redis transport visibility timeout: above every countdown; also the recovery time of a hard-killed worker's
    #: reserved messages (the work queue's lease reaper recovers the running key much sooner)
    visibility_timeout: float = 1800.0
    #: cap of the backoff after an unexpected error (a bug, Redis away)
    retry_backoff_max: float = 300.0
    #: cap of the backoff when the API server failed the request (5xx, 429, no answer): such faults pass, and once
    #: they have, every object that met one should run again within seconds, not minutes (a Retry-After is honoured
    #: up to ``retry_backoff_max``)
    retry_backoff_api_max: float = 5.0
    #: the service account token and CA a process uses when it is given no kubeconfig: where the kubelet mounts
    #: them in a pod; ``poolboy dev --service-accounts`` writes them elsewhere
    service_account_dir: str = "/var/run/secrets/kubernetes.io/serviceaccount"
    #: timeout of every Kubernetes API call
    api_timeout: float = 30.0
    #: Kubernetes Lease used to elect the active watcher
    watcher_lease_name: str = "poolboy-watcher"
    watcher_lease_seconds: float = 15.0
    #: a run that promised to wake a key which is idle (a claim's new handle, a handle's claim) leases it and its task
    #: runs it next, up to this many times per task (0: every run is a task of its own): that saves the key's message
    #: and its consumer's work; such runs show in the run log and the metrics, and in Flower within the first's task
    continued_runs: int = 2
    #: how long a key a run asks to run "soon" (a pool after a bind) may wait, so a burst costs one run of it
    hold_seconds: float = 0.5
    #: reconcilers read through the shared cache the watcher keeps in Redis (off: every read goes to the API)
    read_cache: bool = True
    #: how long the cache stays trusted without a heartbeat from the active watcher (renewed every third of it)
    cache_alive_seconds: float = 15.0
    #: port of the Prometheus metrics endpoint (0 disables it), and the address it binds (``poolboy dev``: loopback)
    metrics_port: int = 0
    metrics_address: str = "0.0.0.0"
    #: workers send Celery task events (received, started, succeeded, failed, …) and worker heartbeats, which is
    #: what Flower (and ``celery events``) show; off saves about one Redis PUBLISH per task state change
    task_events: bool = True
    #: port of /healthz and /readyz of the watcher, a worker or beat (0 disables them), and the address they bind
    health_port: int = 0
    health_address: str = "127.0.0.1"
    #: how long a loop may make no progress (or a worker have no broker connection) before /healthz fails
    health_stall_seconds: float = 60.0
    #: lead times before a claim's lifespan end at which it gets a Warning Event and ``status.lifespan.warnings``
    #: (comma-separated intervals; ``off`` disables them)
    lifespan_warnings: str = "24h,1h,10m"
    #: a waiting claim's place in its queue (``status.queue``, its Bound message) is rewritten at most this often
    queue_status_interval: float = 30.0
    #: names of environment variables, kept for documentation and ``poolboy dev``
    env_names: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``POOLBOY_<FIELD>`` variables (e.g. ``POOLBOY_MANAGE_CLAIMS_INTERVAL=5``).

        ``POOLBOY_NAMESPACE`` is accepted for ``operator_namespace`` and ``REDIS_URL`` for ``redis_url``, the
        names users of upstream Poolboy and of Celery expect. ``environ`` replaces ``os.environ`` (e.g. a child's).
        """
        environ = os.environ if environ is None else environ
        aliases = {"operator_namespace": "POOLBOY_NAMESPACE", "redis_url": "POOLBOY_REDIS_URL"}
        values: dict[str, Any] = {}
        names: dict[str, str] = {}
        for f in fields(cls):
            if f.name == "env_names":
                continue
            env_name = aliases.get(f.name, "POOLBOY_" + f.name.upper())
            names[f.name] = env_name
            old_name = DEPRECATED_ENV.get(f.name)
            if old_name and environ.get(old_name) and not environ.get(env_name):
                warn_deprecated(old_name, env_name)
                env_name = old_name
            values[f.name] = _env(environ, env_name, f.default, type(f.default))
        if "POOLBOY_REDIS_URL" not in environ and environ.get("REDIS_URL"):
            values["redis_url"] = environ["REDIS_URL"]
        values.update(overrides)
        return cls(**values, env_names=names)

    def __post_init__(self) -> None:
        self.lifespan_warning_leads  # noqa: B018 - a bad POOLBOY_LIFESPAN_WARNINGS stops the process at start

    @cached_property
    def lifespan_warning_leads(self) -> tuple[timedelta, ...]:
        """:attr:`lifespan_warnings` parsed, longest first; once per Settings (every claim run asks, and parsing
        the intervals was a few per cent of a claim run's CPU)."""
        from poolboy.domain.lifespan_warnings import parse_leads

        try:
            return parse_leads(self.lifespan_warnings)
        except ValueError as error:
            raise ValueError(f"POOLBOY_LIFESPAN_WARNINGS: {error}") from None

    # --- names derived from the domain -----------------------------------------------------------------------

    @property
    def api_version(self) -> str:
        return f"{self.domain}/v1"

    @property
    def finalizer(self) -> str:
        return self.domain

    def label(self, suffix: str) -> str:
        """``D/<suffix>``: every Poolboy label, annotation and finalizer key is prefixed by the domain."""
        return f"{self.domain}/{suffix}"

"""Prometheus metrics of the engine, safe under Celery's prefork pool.

Counters and histograms are defined at import time, each in the registry of the component that records it
(:mod:`engine.registries`: a worker's, the watcher's, or both); when ``PROMETHEUS_MULTIPROC_DIR`` is set (``poolboy
worker`` sets it before anything imports prometheus_client) each pool child writes its own files and the worker
*parent* serves the aggregate of the worker's families. Gauges about Redis state (work queue depth and age, delaying
queue size, the lengths of the message queues the worker names) are computed on scrape by
:class:`RedisStateCollector`, so they are correct no matter which process did the work.

Names follow controller-runtime where one exists. :func:`observe_api_request` is registered with
:mod:`poolboy.observability` (the neutral hook :mod:`poolboy.kube` calls) by :func:`install_api_hook`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from engine.gauge_spec import GaugeSpec
from engine.registries import WATCHER, WORKER, Own, endpoint, shared
from poolboy.observability import labelled
from workqueue.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from poolboy.settings import Settings

log = logging.getLogger(__name__)

RECONCILE_TOTAL = Counter("controller_runtime_reconcile_total", "Reconciles by controller and result",
                          ["controller", "result"], registry=WORKER)
RECONCILE_ERRORS = Counter("controller_runtime_reconcile_errors_total", "Reconciles that ended in an error",
                           ["controller"], registry=WORKER)
RECONCILE_TIME = Histogram("controller_runtime_reconcile_time_seconds", "Reconcile duration", ["controller"],
                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
                           registry=WORKER)
WORKQUEUE_ADDS = shared(Counter("poolboy_workqueue_adds_total", "Work queue ADD outcomes (and the watcher's OBSERVE: "
                                "also own-write and deferred)", ["outcome"], registry=None), WORKER, WATCHER)
OWN_WRITE_CHECK_ERRORS = Counter("poolboy_watcher_own_write_check_errors_total",
                                 "Own-write checks that failed (the key was added as usual)", registry=WATCHER)
WORKQUEUE_STARTS = Counter("poolboy_workqueue_starts_total",
                           "Work queue START outcomes (busy = another run holds the key)", ["outcome"],
                           registry=WORKER)
WORKQUEUE_WAIT = Histogram("poolboy_workqueue_wait_seconds", "Time from the first pending mark to the run's START",
                           ["controller"], buckets=(0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900),
                           registry=WORKER)
WORKQUEUE_REAPED = Counter("poolboy_workqueue_reaped_total",
                           "Runs re-published because their holder died (lease expired)", registry=WORKER)
SWEEP_SKIPPED = Counter("poolboy_sweep_skipped_total", "Objects a periodic sweep passed over: unchanged since their "
                        "last successful run and owing none", ["kind"], registry=WORKER)
RETRY_DELAY = Histogram("poolboy_retry_delay_seconds", "Backoff chosen after a transient error", ["controller"],
                        buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300), registry=WORKER)
REST_REQUESTS = Counter("rest_client_requests_total", "Kubernetes API requests by status code (0 = network error)",
                        ["code", "method"], registry=WORKER)
EVENTS = Counter("poolboy_events_total", "Kubernetes Events: sent (create|patch requests), aggregated (coalesced "
                 "into a send already owed), dropped (spam|queue_full|error)", ["outcome", "detail"],
                 registry=WORKER)
HANDLE_TRANSITIONS = Counter("poolboy_handle_transitions_total", "Pool handles entering a state (Running, Standby, "
                             "Resuming, Cleaning) or leaving it (Replaced, Reused, CleaningFailed), per pool",
                             ["pool", "state"], registry=WORKER)


def observe_api_request(method: str, code: int) -> None:
    labelled(REST_REQUESTS, str(code), method.upper()).inc()


def observe_event(outcome: str, detail: str) -> None:
    labelled(EVENTS, outcome, detail).inc()


def observe_handle_transition(pool: str, state: str) -> None:
    labelled(HANDLE_TRANSITIONS, pool, state).inc()


def install_api_hook() -> None:
    """Count every request :mod:`poolboy.kube` makes, what became of every Event it was asked to record and every
    pool handle's change of state (all report through :mod:`poolboy.observability`)."""
    from poolboy.observability import on_api_request, on_event, on_handle_transition

    on_api_request(observe_api_request)
    on_event(observe_event)
    on_handle_transition(observe_handle_transition)


#: the gauges :class:`RedisStateCollector` reads from Redis on scrape
WORKQUEUE_PENDING = GaugeSpec("poolboy_workqueue_pending", "Keys owed a run")
WORKQUEUE_OLDEST_PENDING = GaugeSpec("poolboy_workqueue_oldest_pending_seconds", "Age of the oldest pending mark")
DELAYING_QUEUE_SIZE = GaugeSpec("poolboy_delaying_queue_size", "Deadlines in the delaying queue")
DELAYING_QUEUE_OVERDUE = GaugeSpec("poolboy_delaying_queue_overdue_seconds",
                                   "How far past due the earliest deadline is")
CELERY_QUEUE_LENGTH = GaugeSpec("poolboy_celery_queue_length", "Messages waiting per Celery queue", ("queue",))


class RedisStateCollector(Collector):
    """Gauges read from Redis at scrape time: work queue depth/age, delaying queue size/lateness, queue lengths.

    ``queue_lists`` names each message queue and the Redis lists that hold its messages (the messaging adapter's
    layout, :data:`workers.names.QUEUE_LISTS`)."""

    def __init__(self, settings: Settings, queue_lists: Mapping[str, Sequence[str]],
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings
        self.queue_lists = queue_lists
        self.clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from engine import redis_client
        from workqueue.delaying import DelayingQueue
        from workqueue.queue import WorkQueue

        try:
            client = redis_client.client(self.settings, socket_timeout=2)
            work = WorkQueue(client, clock=self.clock)
            pending, oldest = work.pending_stats()
            due = DelayingQueue(work)
            due_size, due_oldest = due.size(), due.oldest()
            lengths = {queue: sum(client.llen(name) for name in names) for queue, names in self.queue_lists.items()}
        except Exception as error:  # a scrape must not fail because Redis is briefly away
            log.warning("redis state metrics unavailable: %s", error)
            return
        lateness = max(0.0, self.clock.now() - due_oldest) if due_oldest is not None else 0.0
        yield WORKQUEUE_PENDING.single(pending)
        yield WORKQUEUE_OLDEST_PENDING.single(oldest)
        yield DELAYING_QUEUE_SIZE.single(due_size)
        yield DELAYING_QUEUE_OVERDUE.single(lateness)
        queue_family = CELERY_QUEUE_LENGTH.family()
        for queue, length in lengths.items():
            queue_family.add_metric([queue], length)
        yield queue_family


#: families renamed, each one's old name: served under both for one release, so dashboards and alerts written for
#: the old names keep working while they move (docs/operations.md, the renamed names)
DEPRECATED_NAMES = {
    "poolboy_workqueue_adds": "poolboy_gate_adds",
    "poolboy_workqueue_starts": "poolboy_gate_starts",
    "poolboy_workqueue_wait_seconds": "poolboy_gate_wait_seconds",
    "poolboy_workqueue_reaped": "poolboy_gate_reaped",
    "poolboy_workqueue_pending": "poolboy_gate_pending",
    "poolboy_workqueue_oldest_pending_seconds": "poolboy_gate_oldest_pending_seconds",
    "poolboy_delaying_queue_size": "poolboy_due_index_size",
    "poolboy_delaying_queue_overdue_seconds": "poolboy_due_index_overdue_seconds",
    "poolboy_celery_queue_length": "poolboy_queue_length",
}


class WithDeprecatedNames(Collector):
    """``source``'s families, each renamed one followed by a copy under its old name (:data:`DEPRECATED_NAMES`)."""

    def __init__(self, source: Collector) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        for family in self.source.collect():
            yield family
            old = DEPRECATED_NAMES.get(family.name)
            if old is not None:
                yield renamed(family, old)


def renamed(family: Metric, name: str) -> Metric:
    """``family`` under ``name``: its samples keep their suffixes (``_total``, ``_bucket``, ...)."""
    copy = Metric(name, f"Deprecated: renamed {family.name}. {family.documentation}", family.type, family.unit)
    copy.samples = [sample._replace(name=name + sample.name[len(family.name):]) for sample in family.samples]
    return copy


def serve(port: int, settings: Settings | None, address: str = "0.0.0.0",
          queue_lists: Mapping[str, Sequence[str]] | None = None) -> CollectorRegistry:
    """Start the worker's scrape endpoint in this process (the worker parent, before the pool forks): the worker's
    families (:data:`engine.registries.WORKER`), with ``settings`` the gauges about Redis state too
    (:class:`RedisStateCollector`)."""
    from prometheus_client import multiprocess

    # a worker's processes each write their samples to files: serve their sum, of the worker's families only, and
    # none of this process's own (its CPU and memory would pass for the whole worker's)
    summed = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
    own = Own(WORKER, multiprocess.MultiProcessCollector(None) if summed else None)
    registry = endpoint(WithDeprecatedNames(own), process=not summed)
    if settings is not None:
        registry.register(WithDeprecatedNames(RedisStateCollector(settings, queue_lists or {})))
    start_http_server(port, addr=address, registry=registry)
    log.info("metrics on http://%s:%d/metrics", address, port)
    return registry


def mark_process_dead(pid: int) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)

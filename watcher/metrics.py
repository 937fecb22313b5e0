"""The watcher's Prometheus metrics (exposed by ``poolboy watcher`` on ``settings.metrics_port``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from engine.registries import WATCHER

EVENTS = Counter("poolboy_watcher_events_total", "Watch events and listed objects handled", ["kind", "type"],
                 registry=WATCHER)
WATCH_RESTARTS = Counter("poolboy_watcher_watch_restarts_total", "Watch streams restarted", ["kind", "reason"],
                         registry=WATCHER)
WATCH_GONE = Counter("poolboy_watcher_watch_gone_total", "410 Gone answers that forced a re-list", ["kind"],
                     registry=WATCHER)
KEYS = Counter("poolboy_watcher_keys_total", "Work keys handed to the work queue", ["kind"], registry=WATCHER)
SINK_ERRORS = Counter("poolboy_watcher_sink_errors_total", "Failed deliveries of watch events to Redis (each retried)",
                      registry=WATCHER)
INFORMERS = Gauge("poolboy_watcher_informers", "Running informers", ["group"], registry=WATCHER)
LEADER = Gauge("poolboy_watcher_leader", "1 while this watcher holds the lease and watches", registry=WATCHER)
SKIPPED = Counter("poolboy_watch_events_skipped_total",
                  "Watch events that added no key: the operator's own write (own-write), or handed to the run of "
                  "their key that was going on, which re-runs the key only for someone else's change (deferred)",
                  ["reason"], registry=WATCHER)
DELIVERY_BATCH = Histogram("poolboy_watcher_delivery_batch_events",
                           "Watch events delivered to Redis in one round trip (watcher/delivery.py): 1 while the "
                           "watcher keeps up, more when events queue up behind a round trip",
                           buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256), registry=WATCHER)
DELIVERY_QUEUED = Gauge("poolboy_watcher_delivery_queued_events",
                        "Watch events waiting for their round trip to Redis (an informer blocks at 1024 in its queue)",
                        registry=WATCHER)

#: why a watch stream restarts (the ``reason`` of :data:`WATCH_RESTARTS`)
RESTART_REASONS = ("gone", "error", "timeout")


def expose_restarts(kind: str) -> None:
    """Every restart series of ``kind`` at 0 before its first restart, so a rate over them reads 0, not no data."""
    WATCH_GONE.labels(kind)
    for reason in RESTART_REASONS:
        WATCH_RESTARTS.labels(kind, reason)

"""Celery configuration built from :class:`Settings` (docs/behaviour.md#delivery): the delivery guarantees the work
queue relies on.

* ``task_acks_late`` + ``task_retry_on_worker_lost`` (bounded by each task's ``max_retries``): a pool child killed
  mid-run gives its message back; the work queue turns the copy into a pending mark, never a concurrent run.
* ``worker_prefetch_multiplier=1``: one reserved message per process, so message priorities (events before resync)
  mean something and no object waits behind a slow one.
* ``visibility_timeout`` above twice the longest run; the engine sends no countdown or ETA message (every wait is in
  the delaying queue, :mod:`workqueue.delaying`), which the Redis transport would redeliver in a loop.
* no result backend: nobody reads reconcile results.
* task events on by default (``POOLBOY_TASK_EVENTS``) so Flower sees every task with its key and runtime; no
  ``task-sent`` events (the watcher publishes most tasks, and ``task-received`` already carries the arguments).
  On Redis an event is one ``PUBLISH``: nothing queues up when no monitor listens. A busy worker sends its events in
  batches of up to a quarter of a second (:mod:`workers.compat`).
* the broker connection is retried forever, on kombu's Redis transport with the guard of
  :mod:`workers.compat` (a Redis restart must never end a worker).
* beat runs celery-redbeat: its lock in Redis lets a standby replica take over (:mod:`workers.beat_scheduler`).
"""

from __future__ import annotations

from typing import Any

from kombu import Exchange, Queue

from poolboy import kinds
from poolboy.settings import Settings
from workers import broker
from workers.names import PERIODIC_PREFIX, PERIODIC_QUEUE, QUEUES, manage_task, reconcile_task
from workqueue import keyspace


def _entry(task: str, interval: float) -> dict:
    # An entry that could not run before its next tick is worthless: let it expire instead of piling up.
    return {"task": task, "schedule": interval, "options": {"expires": max(2 * interval, 5.0)}}


def beat_schedule(settings: Settings) -> dict[str, dict]:
    """Beat's entries (tasks in :mod:`workers.beat`, by name): each swept kind's manage sweep, the full resync."""
    sweeps = {f"manage-{kind.queue}": _entry(manage_task(kind), getattr(settings, str(kind.sweep_interval)))
              for kind in kinds.DECLARED if kind.sweep_interval}
    return {**sweeps, "resync": _entry(PERIODIC_PREFIX + "resync", settings.resync_interval)}


def declared_queue(name: str) -> Queue:
    """Queue ``name`` bound to a direct exchange of its own name by its own name: what Celery's documentation
    declares and what the worker's banner lists. Every message reaches it through the anonymous exchange, routing
    key ``name`` (``send_task`` and :mod:`workers.messages` alike); a bare ``Queue(name)`` would be given the default
    queue's exchange and key instead, so the banner would name ``periodic`` for every queue."""
    return Queue(name, Exchange(name, type="direct"), routing_key=name)


def build(settings: Settings) -> dict[str, Any]:
    routes: dict[str, dict[str, str]] = {f"{PERIODIC_PREFIX}*": {"queue": PERIODIC_QUEUE}}
    routes.update({reconcile_task(kind.token): {"queue": kind.queue} for kind in kinds.DECLARED})
    if settings.visibility_timeout <= 2 * settings.reconcile_time_limit:
        raise ValueError("visibility_timeout must exceed twice the reconcile time limit")
    transport = broker.celery_options(settings)
    transport["broker_transport_options"]["visibility_timeout"] = settings.visibility_timeout
    return {
        **transport,
        "broker_connection_retry_on_startup": True,
        # a Redis restart or failover never ends a worker: reconnect for as long as it takes (Celery's default gives
        # up after 100 attempts); a worker that stays without a connection fails /healthz instead (workers.health)
        "broker_connection_retry": True,
        "broker_connection_max_retries": None,
        "task_serializer": "json",
        "accept_content": ["json"],
        "result_serializer": "json",
        "result_backend": None,
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_retry_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "worker_eta_task_limit": 1000,
        "worker_max_tasks_per_child": 2000,
        "task_soft_time_limit": settings.reconcile_soft_time_limit,
        "task_time_limit": settings.reconcile_time_limit,
        "task_queues": [declared_queue(name) for name in QUEUES],
        "task_default_queue": PERIODIC_QUEUE,
        "task_routes": routes,
        "task_default_priority": 0,
        "worker_hijack_root_logger": True,
        "worker_send_task_events": settings.task_events,
        "task_send_sent_event": False,
        "worker_consumer": "workers.compat:Consumer",  # task events in batches
        # beat: celery-redbeat (schedule and lock in Redis), so a standby beat takes over (workers/beat_scheduler.py)
        "beat_scheduler": "workers.beat_scheduler:Scheduler",
        # also how long redbeat sleeps between attempts at its lock: a standby (or a beat whose lock Redis lost)
        # must not wait the default 5 minutes to tick again
        "beat_max_loop_interval": max(1.0, min(5.0, settings.beat_lock_timeout / 3)),
        "redbeat_key_prefix": keyspace.BEAT,
        "redbeat_lock_timeout": max(2, int(settings.beat_lock_timeout)),
        **broker.redbeat_options(settings),
        "beat_schedule": beat_schedule(settings),
        "enable_utc": True,
        "timezone": "UTC",
    }

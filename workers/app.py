"""The Celery app: ``celery -A workers.app`` (or ``poolboy worker`` / ``poolboy beat``).

Configuration comes from :class:`Settings` read from the environment once per process. Signals wire the metrics
endpoint into the worker *parent* (before the pool forks) and clean up per-child metric files.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init, worker_process_shutdown, worker_shutting_down

from poolboy.settings import Settings
from workers import config

settings = Settings.from_env()

app = Celery("poolboy", set_as_current=True)
app.config_from_object(config.build(settings))
app.conf.include = ["workers.tasks", "workers.beat"]


@worker_init.connect
def _preload_reconcilers(**_: object) -> None:
    """Import the domain in the parent, before the pool forks: children inherit it (see registry.preload)."""
    from workers import registry

    registry.preload()


@worker_init.connect
def _start_metrics(**_: object) -> None:
    from workers import metrics

    metrics.install_api_hook()
    if settings.metrics_port:
        metrics.serve(settings.metrics_port, settings)


@worker_process_init.connect
def _graceful_child(**_: object) -> None:
    """Pool child: SIGTERM gives a running reconcile the grace period, then hands its key back (workers.shutdown)."""
    from workers import shutdown

    shutdown.mark_pool_child(settings.worker_shutdown_grace)


@worker_shutting_down.connect
def _stop_children(**_: object) -> None:
    """Parent told to stop (Kubernetes signals PID 1 only): start the children's grace period now."""
    from workers import shutdown

    shutdown.forward_to_busy_children()


@worker_process_shutdown.connect
def _metrics_child_exit(pid: int | None = None, **_: object) -> None:
    from workers import metrics

    metrics.mark_process_dead(pid or os.getpid())


# Import the task modules now so that `celery -A workers.app` and publishers share one registry.
import workers.beat  # noqa: E402
import workers.tasks  # noqa: E402, F401

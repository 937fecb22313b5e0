"""The Celery app: ``celery -A workers.app`` (or ``poolboy worker`` / ``poolboy beat``).

Configuration comes from :class:`Settings` read from the environment once per process. Signals wire the metrics
endpoint into the worker *parent* (before the pool forks), send a pool child's queued Events before it exits, and
clean up per-child metric files.
"""

from __future__ import annotations

import logging
import os

from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    beat_init,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutting_down,
)

from poolboy.settings import Settings
from workers import config, json_codec
from workers.health import LoopTicks
from workers.operator_app import OperatorApp
from workers.pump import PumpStep

settings = Settings.from_env()
json_codec.install()  # task messages and task events through orjson (the same JSON, less CPU)

app = OperatorApp("poolboy", settings=settings, set_as_current=True)
app.config_from_object(config.build(settings))
app.conf.include = ["workers.tasks", "workers.beat"]  # the worker imports them; publishers send by name
app.steps["worker"].add(PumpStep)  # every worker releases due keys and expired leases (workers/pump.py)


@after_setup_logger.connect
@after_setup_task_logger.connect
def _operator_logs(logger: logging.Logger | None = None, **_: object) -> None:
    """Logs an operator can use (worker, beat, and every pool child, which sets its logging up again): every
    handler stamps the object a line is about and, with ``POOLBOY_LOG_FORMAT=json``, writes JSON; Celery's
    per-task lines (which name a task id; :mod:`engine.run_log` writes one line per reconcile instead) and beat's
    "Sending due task" every second go to DEBUG."""
    from poolboy import logs

    fmt = os.environ.get("POOLBOY_LOG_FORMAT") or "text"
    for handler in (logger.handlers if logger is not None else ()):
        logs.decorate(handler, fmt)
    if fmt == "json":
        logging.captureWarnings(True)
    logs.demote("celery.app.trace")  # "Task … succeeded in …" (failures stay at ERROR)
    logs.demote("celery.worker.strategy")  # "Task … received"
    logs.demote("celery.beat", lambda record: str(record.msg).startswith("Scheduler: Sending due task"))


def _forks_children(worker: object) -> bool:
    """Whether the worker's pool is prefork (``pool_cls`` is still the name or class given, before Celery resolves
    it)."""
    pool = getattr(worker, "pool_cls", None)
    name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
    return name in ("prefork", "processes") or name.endswith(".prefork")


def _warm_up() -> None:
    """What the first reconcile needs and the consumer does not: the domain (templating, schemas) and the API
    client (the official package's configuration loader). At a lower CPU priority (Linux schedules threads one by
    one): where several workers start at once, the ones still starting come first. It starts no thread (a thread
    inherits its creator's priority): the lease renewer and the Event senders start with the first run and Event."""
    import contextlib
    import threading

    from poolboy.reconcilers import preload

    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)

    preload(app.runtime.reconcilers)
    app.runtime.get().kube  # noqa: B018 (built on first use; this is the first use)


@worker_init.connect
def _preload_reconcilers(sender: object = None, **_: object) -> None:
    """Prefork: import the domain in the parent, before the pool forks, so the children inherit it (see
    poolboy.reconcilers.preload). Other pools run reconciles in this process: the same warm-up runs once the consumer
    is ready (:func:`_warm_up_after_ready`), off the path to ready — about 0.7 s of CPU per worker, which on a node
    starting several workers at once is most of their start-up; a task that comes first waits on the import lock.
    First of all, the app starts the runtime its tasks run with, running the domain's reconcilers or those
    ``poolboy worker --reconcilers`` gave the worker (``app.Worker(reconcilers=…)``, kept in the worker's options)."""
    from poolboy.reconcilers import preload

    runtime = app.start_runtime(getattr(sender, "options", {}).get("reconcilers"))
    if not _forks_children(sender):
        _deferred_warm_up.append(True)
        return
    import gc

    preload(runtime.reconcilers)
    # Move everything imported so far out of the collector's reach: a collection in a child would otherwise write
    # to every object's header and copy the parent's pages (measured: worker tree PSS 123 -> 101 MiB, 2 children)
    gc.freeze()


#: set by :func:`_preload_reconcilers` when the warm-up waits for the consumer to be ready
_deferred_warm_up: list[bool] = []


@worker_ready.connect
def _warm_up_after_ready(**_: object) -> None:
    if _deferred_warm_up:
        import threading

        threading.Thread(target=_warm_up, name="poolboy-warm-up", daemon=True).start()


@worker_init.connect
def _start_metrics(**_: object) -> None:
    from engine import metrics
    from workers.names import QUEUE_LISTS

    metrics.install_api_hook()
    if settings.metrics_port:
        metrics.serve(settings.metrics_port, settings, settings.metrics_address, QUEUE_LISTS)


@worker_process_init.connect
def _graceful_child(**_: object) -> None:
    """Pool child: SIGTERM gives a running reconcile the grace period, then hands its key back (engine.shutdown)."""
    from engine import shutdown

    shutdown.mark_pool_child(settings.worker_shutdown_grace)


@worker_shutting_down.connect
def _stop_children(**_: object) -> None:
    """Told to stop (Kubernetes signals PID 1 only): start the grace period of the running reconciles now — in the
    prefork children, and in this process itself under the threads or gevent pool."""
    from celery.worker import state

    from engine import shutdown

    shutdown.forward_to_busy_children(pid for request in tuple(state.active_requests)
                                      if isinstance(pid := getattr(request, "worker_pid", None), int))
    shutdown.stop_in_process_runs(settings.worker_shutdown_grace)


#: the worker's consumer, once it is ready (its broker connection is what the worker's /healthz checks)
_consumer: list[object] = []
#: when the consumer's event loop last turned
_loop_ticks = LoopTicks()


@worker_ready.connect
def _remember_consumer(sender: object = None, **_: object) -> None:
    """Keep the consumer for /healthz, and have its event loop (if it has one) stamp every pass."""
    _consumer[:] = [sender]
    hub = getattr(sender, "hub", None)
    if hub is not None:
        hub.on_tick.add(_loop_ticks)


@worker_init.connect
def _start_health(**_: object) -> None:
    """/healthz: the consumer runs with a broker connection; /readyz: it consumes now, and Redis and the API
    answer."""
    from workers import health

    # the loop stalls while a task blocks it (the solo pool), at most for the task time limit
    silence = max(settings.health_stall_seconds, settings.reconcile_time_limit)

    def consumer() -> str | None:
        return health.consumer_probe(_consumer[0], _loop_ticks, silence) if _consumer else "consumer not started"

    api_probe: list[health.Probe] = []

    def api() -> str | None:
        # the client is built on the first probe, not on the path to ready (see _preload_reconcilers)
        if not api_probe:
            try:
                from poolboy.kube import KubeClient

                api_probe.append(health.api_probe(KubeClient.from_settings(settings)))
            except Exception as error:  # no cluster configuration: reconciles will fail too, so say so
                return f"no Kubernetes client: {error}"
        return api_probe[0]()

    # ready only while consuming (from the start: the liveness grace does not apply), and Redis and the API answer
    ready = {"consuming": consumer, "redis": health.redis_probe(settings), "api": api}
    health.start_for(settings, {"consumer": health.Sustained(consumer, settings.health_stall_seconds)}, ready)


@beat_init.connect
def _start_beat_runtime(**_: object) -> None:
    """Beat adds the keys of the sweeps it runs itself (workers.beat_scheduler) through a runtime like a worker's,
    built on first use."""
    app.start_runtime()


@beat_init.connect
def _start_beat_health(sender: object = None, **_: object) -> None:
    """/healthz: beat's scheduler loop ticks (or waits for the lock); /readyz: Redis answers too (beat makes no
    Kubernetes API call). Then the scheduler's lock, which a standby waits for here."""
    from workers import beat_scheduler, health

    stall = max(settings.health_stall_seconds, 3 * float(app.conf.beat_max_loop_interval))
    health.start_for(settings, {"tick": health.beat_probe(sender, stall)},
                     {"redis": health.redis_probe(settings)})
    if isinstance(vars(sender).get("scheduler"), beat_scheduler.Scheduler):
        beat_scheduler.wait_for_lock(sender)


@worker_process_shutdown.connect
def _flush_events(**_: object) -> None:
    """A pool child exits without running ``atexit`` handlers: send the Events it queued before it goes."""
    from poolboy.kube import event_recorder

    event_recorder.flush(event_recorder.EXIT_FLUSH_SECONDS)


@worker_process_shutdown.connect
def _metrics_child_exit(pid: int | None = None, **_: object) -> None:
    from engine import metrics

    metrics.mark_process_dead(pid or os.getpid())


"""``poolboy worker``: a Celery worker of the reconcile engine, with its Prometheus endpoint.

Runs under a unique node name, so several replicas never collide, without gossip and mingle (nothing in the
engine uses them; they cost broker traffic per worker). With task events on (``POOLBOY_TASK_EVENTS``, the
default, or ``--task-events``) it sends task events and a heartbeat every ``HEARTBEAT_SECONDS``: Flower lists a
worker as online from its heartbeats and its tasks from the events; off, neither is sent.

With a metrics port, prometheus-client runs in multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR`` is set (and
emptied) *before* anything imports the client, pool children write their samples there, and the parent serves the
sum. A directory the worker made itself (none named) is removed when it stops, so restarts leave nothing in ``/tmp``.

``--reconcilers <module>:<attr>`` names the mapping of kind token to reconciler the worker runs instead of the
domain's (:data:`poolboy.reconcilers.RECONCILERS`): the integration tests' instrumented reconcilers.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from stack import log_options
from workers.names import DEFAULT_QUEUES

if TYPE_CHECKING:
    from poolboy.reconcilers import Reconciler

#: Celery execution pools a worker may use (``-P``)
POOLS = ("prefork", "solo", "threads", "gevent")
#: the default pool and its size: reconciles mostly wait on the API server and Redis, so one process runs several
#: in threads (one process per worker instead of a parent and its children: less memory, CPU and start-up time).
#: Time limits and the shutdown hand-back reach them at their stop points (engine.shutdown); prefork kills a
#: stuck reconcile outright and isolates crashes, for providers whose templates an administrator does not trust.
DEFAULT_POOL = "threads"
DEFAULT_CONCURRENCY = 4


def local_concurrency(workers: int, cores: int | None = None, pool: str = DEFAULT_POOL) -> int:
    """Reconciles at once per worker when ``workers`` workers share one machine (``poolboy dev``): threads
    :data:`DEFAULT_CONCURRENCY` each, whatever the number of workers; prefork children (a process each) about two per
    core in all, at most :data:`DEFAULT_CONCURRENCY` each.

    A reconcile mostly waits (on the API server, on Redis, on its worker's event loop acking a message and fetching
    the next), and a thread slot costs next to nothing, so threads overlap those waits: on 2 cores, with 1 ms of
    Redis and 10 ms of API latency, 8 workers bind faster and with less CPU per claim at four threads each than at
    two (benchmarks/README.md has the figures). Prefork children are processes: more of them than cores only queue
    for the same cores."""
    cores = cores or os.cpu_count() or 1
    if pool == "prefork":
        return max(1, min(DEFAULT_CONCURRENCY, (2 * cores) // max(1, workers)))
    return DEFAULT_CONCURRENCY


#: seconds between worker heartbeats (Celery's default is 2); Flower marks a worker offline after two missed ones
HEARTBEAT_SECONDS = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queues", "-Q", default=os.environ.get("POOLBOY_WORKER_QUEUES", DEFAULT_QUEUES),
                        help=f"comma-separated queues to consume (default {DEFAULT_QUEUES})")
    concurrency = int(os.environ.get("POOLBOY_WORKER_CONCURRENCY", DEFAULT_CONCURRENCY))
    parser.add_argument("--concurrency", "-c", type=int, default=concurrency,
                        help=f"reconciles at once: threads, or prefork children (default {DEFAULT_CONCURRENCY})")
    parser.add_argument("--pool", "-P", choices=POOLS, default=os.environ.get("POOLBOY_WORKER_POOL", DEFAULT_POOL),
                        help=f"execution pool (default {DEFAULT_POOL}): threads and gevent run several reconciles in "
                             "one process; prefork kills a reconcile past its hard time limit and isolates crashes")
    log_options.add_arguments(parser)
    parser.add_argument("--hostname", "-n", default=None,
                        help="node name (default poolboy-<random>@<host>, unique per process)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="Prometheus port served by the worker parent (default $POOLBOY_METRICS_PORT, 0 = off)")
    parser.add_argument("--task-events", choices=("on", "off"), default=None,
                        help="send task events and heartbeats for Flower (default $POOLBOY_TASK_EVENTS, on)")
    parser.add_argument("--reconcilers", metavar="MODULE:ATTR", default=None,
                        help="the mapping of kind to reconciler to run instead of the domain's (tests)")


def _prepare_metrics_dir() -> Path | None:
    """The samples' directory, empty; returns it when this process made it (and so removes it when it stops)."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        path = Path(directory)
        if path.exists():  # stale files of a previous run would be summed in
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return None
    made = tempfile.mkdtemp(prefix="poolboy-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
    return Path(made)


def resolve_reconcilers(target: str) -> Mapping[str, Reconciler]:
    """The mapping ``<module>:<attr>`` names; exits with the reason if there is none (the worker must not start
    with reconcilers other than those it was told to run)."""
    module_name, _, attr = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as error:
        raise SystemExit(f"poolboy worker: --reconcilers {target}: {error}") from error
    if not isinstance(found, Mapping):
        raise SystemExit(f"poolboy worker: --reconcilers {target}: a {type(found).__name__}, not a mapping")
    return cast("Mapping[str, Reconciler]", found)


def worker_options(args: argparse.Namespace, task_events: bool) -> dict[str, object]:
    """What ``celery worker`` would pass to ``app.Worker`` for our flags (see :func:`run` for why not the CLI)."""
    from celery.utils.nodenames import default_nodename, host_format

    hostname = args.hostname or f"poolboy-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    options: dict[str, object] = {
        "hostname": host_format(default_nodename(hostname)), "queues": args.queues.split(","),
        "concurrency": args.concurrency, "pool_cls": args.pool, "loglevel": args.log_level,
        "without_gossip": True, "without_mingle": True,
        "quiet": args.log_format == "json",  # JSON output has no room for Celery's start-up banner
    }
    if task_events:
        return {**options, "task_events": True, "heartbeat_interval": HEARTBEAT_SECONDS}
    return {**options, "without_heartbeat": True}


def run(args: argparse.Namespace) -> int:
    if args.metrics_port is not None:
        os.environ["POOLBOY_METRICS_PORT"] = str(args.metrics_port)
    if args.task_events is not None:  # before workers.app reads the settings (worker_send_task_events)
        os.environ["POOLBOY_TASK_EVENTS"] = "true" if args.task_events == "on" else "false"
    made = _prepare_metrics_dir() if int(os.environ.get("POOLBOY_METRICS_PORT") or 0) else None
    try:
        return _run_worker(args)
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


def _run_worker(args: argparse.Namespace) -> int:
    from poolboy.settings import Settings

    options = worker_options(args, Settings.from_env().task_events)
    # gevent must patch the standard library before the app (redis, urllib3, threading) is imported, as
    # `celery worker -P gevent` does first thing; a no-op for the other pools
    from celery import maybe_patch_concurrency

    maybe_patch_concurrency(["-P", args.pool])
    if args.reconcilers:  # imported once gevent has patched and the metrics directory is set, as the domain is
        options["reconcilers"] = resolve_reconcilers(args.reconcilers)  # handed to worker_init (workers.app)
    from workers.app import app

    # app.Worker, as `celery worker` builds it, without Celery's command line: the CLI loads every installed
    # `celery` sub-command plugin (Flower, the REPL's prompt_toolkit) at start-up, 0.3 s of CPU in every worker
    worker = app.Worker(**options)
    worker.start()
    return int(worker.exitcode or 0)

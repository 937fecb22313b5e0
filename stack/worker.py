"""``poolboy worker``: a Celery worker of the reconcile engine, with its Prometheus endpoint.

Runs without gossip, mingle and heartbeat (nothing in the engine uses them; they cost broker traffic per worker)
under a unique node name, so several replicas never collide. With a metrics port, prometheus-client runs in
multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR`` is set (and emptied) *before* anything imports the client, pool
children write their samples there, and the parent serves the sum.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path

from stack import log_options

DEFAULT_QUEUES = "claims,handles,pools,providers,scalings,periodic"
#: Celery execution pools a worker may use (``-P``)
POOLS = ("prefork", "solo", "threads", "gevent")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queues", "-Q", default=os.environ.get("POOLBOY_WORKER_QUEUES", DEFAULT_QUEUES),
                        help=f"comma-separated queues to consume (default {DEFAULT_QUEUES})")
    parser.add_argument("--concurrency", "-c", type=int, default=int(os.environ.get("POOLBOY_WORKER_CONCURRENCY", 2)),
                        help="pool size (default 2)")
    parser.add_argument("--pool", "-P", choices=POOLS, default="prefork",
                        help="execution pool; prefork enforces hard time limits and isolates crashes (default); "
                             "threads and gevent run many I/O-bound reconciles in one process")
    log_options.add_arguments(parser)
    parser.add_argument("--hostname", "-n", default=None,
                        help="node name (default poolboy-<random>@<host>, unique per process)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="Prometheus port served by the worker parent (default $POOLBOY_METRICS_PORT, 0 = off)")


def _prepare_metrics_dir() -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        path = Path(directory)
        if path.exists():  # stale files of a previous run would be summed in
            shutil.rmtree(path)
        path.mkdir(parents=True)
    else:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="poolboy-metrics-")


def build_argv(args: argparse.Namespace) -> list[str]:
    hostname = args.hostname or f"poolboy-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    return [*log_options.celery_flags(args), "worker", "-Q", args.queues, "-c", str(args.concurrency),
            "-P", args.pool, "-n", hostname, "-l", args.log_level,
            "--without-gossip", "--without-mingle", "--without-heartbeat"]


def run(args: argparse.Namespace) -> int:
    if args.metrics_port is not None:
        os.environ["POOLBOY_METRICS_PORT"] = str(args.metrics_port)
    if int(os.environ.get("POOLBOY_METRICS_PORT") or 0):
        _prepare_metrics_dir()
    argv = build_argv(args)
    # gevent must patch the standard library before the app (redis, urllib3, threading) is imported, as
    # `celery worker -P gevent` does first thing; a no-op for the other pools
    from celery import maybe_patch_concurrency

    maybe_patch_concurrency(argv)
    from workers.app import app

    app.worker_main(argv)
    return 0

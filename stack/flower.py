"""``poolboy flower``: Flower against the engine's broker (task throughput, workers, queue lengths).

Flower shows what the workers' task events and heartbeats tell it (on by default, ``POOLBOY_TASK_EVENTS``; their
cost is in ``benchmarks/README.md``). Its ``/api/*`` answers 401 unless ``--basic-auth`` (``FLOWER_BASIC_AUTH``) or
``FLOWER_UNAUTHENTICATED_API=true`` is set, and its ``/metrics`` is unauthenticated even with ``--basic-auth``: bind
it to loopback or keep it behind a cluster-internal Service.
"""

from __future__ import annotations

import argparse
import os

from stack import log_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=5555, help="HTTP port (default 5555)")
    parser.add_argument("--address", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--basic-auth", default=os.environ.get("FLOWER_BASIC_AUTH"),
                        help="user:password[,user:password] (default $FLOWER_BASIC_AUTH)")
    parser.add_argument("--url-prefix", default=None, help="serve under this path prefix (behind an ingress)")
    log_options.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from workers.app import app

    argv = [*log_options.celery_flags(args), "flower", f"--port={args.port}", f"--address={args.address}",
            "--max_tasks=20000",
            "--purge_offline_workers=300",
            f"--logging={args.log_level.lower()}"]
    if args.basic_auth:
        argv.append(f"--basic-auth={args.basic_auth}")
    if args.url_prefix:
        argv.append(f"--url_prefix={args.url_prefix}")
    app.start(argv)
    return 0

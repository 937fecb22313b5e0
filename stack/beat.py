"""``poolboy beat``: the scheduler of the engine's sweeps (delaying queue, manage sweeps, full resync).

It runs celery-redbeat (:mod:`workers.beat_scheduler`): the schedule and a lock live in Redis, so two replicas may
run; the one holding the lock ticks, the other waits and takes over at most ``POOLBOY_BEAT_LOCK_TIMEOUT`` seconds
after the active one died. Every sweep only adds keys to the work queue, so even an overlap costs nothing but duplicate
sweeps. ``poolboy dev`` runs one.
"""

from __future__ import annotations

import argparse

from stack import log_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    log_options.add_arguments(parser)
    parser.add_argument("--max-interval", type=float, default=1.0,
                        help="longest sleep between schedule checks, and a standby's lock poll, seconds (default 1)")


def run(args: argparse.Namespace) -> int:
    from workers.app import app

    app.conf.beat_max_loop_interval = args.max_interval  # the CLI flag only takes whole seconds
    # app.Beat as `celery beat` runs it, without Celery's command line (its plugins cost 0.3 s of CPU at start-up,
    # see stack/worker.py); JSON output has no room for the start-up banner
    app.Beat(loglevel=args.log_level, quiet=args.log_format == "json").run()
    return 0

"""``poolboy beat``: the scheduler of the engine's sweeps (due-index, manage sweeps, full resync).

Run exactly one (Deployment ``replicas: 1``, ``strategy: Recreate``). A second one by mistake is harmless (every
sweep only adds keys to the gate, which coalesces) but wasteful. Its state file only records last-run times of
interval entries, so it lives in a temporary directory unless ``--schedule-file`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import tempfile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loglevel", "-l", default="INFO", help="log level (default INFO)")
    parser.add_argument("--schedule-file", default=None,
                        help="beat state file (default: a file in a fresh temporary directory)")
    parser.add_argument("--max-interval", type=float, default=1.0,
                        help="longest sleep between schedule checks, seconds (default 1)")


def run(args: argparse.Namespace) -> int:
    from workers.app import app

    schedule = args.schedule_file or os.path.join(tempfile.mkdtemp(prefix="poolboy-beat-"), "schedule")
    app.conf.beat_max_loop_interval = args.max_interval  # the CLI flag only takes whole seconds
    app.start(["beat", "-l", args.loglevel, "-s", schedule])
    return 0

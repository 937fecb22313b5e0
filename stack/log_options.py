"""``--log-level`` and ``--log-format``: one spelling for every sub-command.

Defaults come from ``POOLBOY_LOG_LEVEL`` (``INFO``) and ``POOLBOY_LOG_FORMAT`` (``text``; ``json`` writes one JSON
object per line, see :mod:`poolboy.logs`). ``--loglevel`` / ``-l`` (Celery's spelling, used by earlier versions)
are still accepted but not shown. :func:`apply` exports the chosen values, so Celery's logging hooks in
:mod:`workers.app` and every child process (``poolboy dev``'s components, a worker's pool children) agree.
"""

from __future__ import annotations

import argparse
import os

from poolboy.logs import FORMATS

LEVEL_ENV = "POOLBOY_LOG_LEVEL"
FORMAT_ENV = "POOLBOY_LOG_FORMAT"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", dest="log_level", default=os.environ.get(LEVEL_ENV) or "INFO",
                        type=str.upper, help=f"DEBUG, INFO, WARNING or ERROR (default ${LEVEL_ENV} or INFO)")
    parser.add_argument("--loglevel", "-l", dest="log_level", default=argparse.SUPPRESS, type=str.upper,
                        help=argparse.SUPPRESS)
    parser.add_argument("--log-format", dest="log_format", choices=FORMATS,
                        default=os.environ.get(FORMAT_ENV) or "text",
                        help=f"text, or json: one JSON object per line (default ${FORMAT_ENV} or text)")


def apply(args: argparse.Namespace) -> None:
    """Set up this process's logging and export the chosen level and format to its environment (read by Celery's
    logging hooks and inherited by child processes). Celery replaces the root handler later but keeps the format
    (:mod:`workers.app`); until then a warning Celery issues at start-up is already a formatted record."""
    from poolboy import logs

    os.environ[LEVEL_ENV] = args.log_level
    os.environ[FORMAT_ENV] = args.log_format
    logs.configure(args.log_level, args.log_format)


def celery_flags(args: argparse.Namespace) -> list[str]:
    """Celery's global options for this format: JSON output has no room for Celery's start-up banner."""
    return ["--quiet"] if args.log_format == "json" else []

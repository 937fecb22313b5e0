"""The ``poolboy`` command: one sub-command per process of the system.

Each sub-command lives in its own module exposing ``add_arguments(parser)`` and ``run(args)``; modules keep
their heavy imports inside ``run`` so ``poolboy --help`` stays fast and a component never loads what it does
not run.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: sub-command -> (module with ``add_arguments(parser)`` and ``run(args) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "dev": ("stack.dev", "run the whole system locally (devcluster, Redis, watcher, workers, beat, Flower)"),
    "worker": ("stack.worker", "run a Celery worker of the reconcile engine (per-kind queues, metrics endpoint)"),
    "beat": ("stack.beat", "run the scheduler of the engine's sweeps; two may run, a Redis lock elects one"),
    "crds": ("stack.crds", "print or write the CRDs for an operator domain"),
    "flower": ("stack.flower", "run Flower against the engine's broker"),
    "watcher": ("stack.watcher", "list-then-watch Poolboy kinds and managed resources; every event adds a work key"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="poolboy", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(_module=module_name)
        module = importlib.import_module(module_name)
        module.add_arguments(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from stack import log_options

    if hasattr(args, "log_format"):  # this process, its children and Celery's hooks log the same way
        log_options.apply(args)

    module = importlib.import_module(args._module)
    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

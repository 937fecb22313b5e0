"""Which callable reconciles which kind: ``fn(ctx, namespace, name) -> Result``.

The default is :data:`poolboy.reconcilers.RECONCILERS` (written by the domain engineers, imported lazily so a worker
starts even while a kind is missing). ``POOLBOY_RECONCILERS=<module>:<attr>`` overrides it with any mapping of kind
token to callable: the integration tests use this to run trivial, instrumented reconcilers in real workers.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

ENV = "POOLBOY_RECONCILERS"
DEFAULT = "poolboy.reconcilers:RECONCILERS"

Reconciler = Callable[[Any, str, str], Any]


@cache
def reconcilers() -> Mapping[str, Reconciler]:
    target = os.environ.get(ENV) or DEFAULT
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr or "RECONCILERS")


def preload() -> list[str]:
    """Import every registered reconciler now; returns the kinds that failed (logged, never fatal).

    Called in the worker parent before the prefork pool starts, so the children inherit the imported modules
    instead of each paying for them on its first task (importing jsonschema's format checkers compiles a grammar:
    about a second of CPU, which made the first reconcile of every child, and every claim queued behind it, slow).
    """
    failed = []
    try:
        kinds = list(reconcilers())
    except (ModuleNotFoundError, AttributeError) as error:
        log.warning("reconcilers not preloaded: %s", error)
        return ["*"]
    for kind in kinds:
        try:
            lookup(kind)
        except Exception as error:  # a broken kind must not stop the worker; its tasks report it when they run
            log.warning("reconciler for %s not preloaded: %s", kind, error)
            failed.append(kind)
    return failed


def lookup(kind: str) -> Reconciler:
    """The reconciler of ``kind``; raises LookupError if none is registered."""
    try:
        return reconcilers()[kind]
    except (KeyError, ModuleNotFoundError, AttributeError) as error:
        raise LookupError(f"no reconciler registered for kind {kind!r}: {error}") from error

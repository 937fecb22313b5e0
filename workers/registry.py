"""Which callable reconciles which kind: ``fn(ctx, namespace, name) -> Result``.

The default is :data:`poolboy.reconcilers.RECONCILERS` (written by the domain engineers, imported lazily so a worker
starts even while a kind is missing). ``POOLBOY_RECONCILERS=<module>:<attr>`` overrides it with any mapping of kind
token to callable: the integration tests use this to run trivial, instrumented reconcilers in real workers.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

ENV = "POOLBOY_RECONCILERS"
DEFAULT = "poolboy.reconcilers:RECONCILERS"

Reconciler = Callable[[Any, str, str], Any]


@cache
def reconcilers() -> Mapping[str, Reconciler]:
    target = os.environ.get(ENV) or DEFAULT
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr or "RECONCILERS")


def lookup(kind: str) -> Reconciler:
    """The reconciler of ``kind``; raises LookupError if none is registered."""
    try:
        return reconcilers()[kind]
    except (KeyError, ModuleNotFoundError, AttributeError) as error:
        raise LookupError(f"no reconciler registered for kind {kind!r}: {error}") from error

"""Domain reconcilers, one per kind: ``reconcile(ctx, namespace, name) -> Result``; and the one registry of them.

A kind's ``reconcile`` is its declaration to the shared preamble
(:class:`~poolboy.reconcilers.preamble.ObjectReconciler`: read, ignore, finalize, converge), so that the engine
calls the preamble and the preamble the kind; the provider's, which neither finalizes nor ignores, is a plain
function. The engine looks reconcilers up by kind token (see :mod:`poolboy.keys`) in the :class:`Registry` that
:func:`registry` returns: :data:`RECONCILERS` by default, or any mapping of kind token to callable named
``<module>:<attr>`` (the worker passes ``POOLBOY_RECONCILERS``; the integration tests use it to run trivial,
instrumented reconcilers in real workers). Modules are imported on first use so that importing the registry stays
cheap and a broken kind cannot stop the others from loading; :meth:`Registry.preload` imports them all at once (in
the worker parent, before the pool forks).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Mapping
from functools import cache, cached_property
from typing import cast

from poolboy.context import Context
from poolboy.result import Result

log = logging.getLogger(__name__)

Reconciler = Callable[[Context, str, str], Result]

_MODULES = {
    "claim": "poolboy.reconcilers.claim",
    "handle": "poolboy.reconcilers.handle",
    "pool": "poolboy.reconcilers.pool",
    "provider": "poolboy.reconcilers.provider",
    "scaling": "poolboy.reconcilers.scaling",
}


class _LazyReconcilers(Mapping[str, Reconciler]):
    """Each kind's module imported on its first lookup, then remembered: every run looks its reconciler up, and an
    ``import_module`` of a loaded module still costs a few microseconds of import machinery."""

    def __init__(self) -> None:
        self._loaded: dict[str, Reconciler] = {}

    def __getitem__(self, kind: str) -> Reconciler:
        found = self._loaded.get(kind)
        if found is None:
            found = self._loaded[kind] = cast(Reconciler, importlib.import_module(_MODULES[kind]).reconcile)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


RECONCILERS: Mapping[str, Reconciler] = _LazyReconcilers()
#: the default ``<module>:<attr>`` of :func:`registry`
DEFAULT = "poolboy.reconcilers:RECONCILERS"


class Registry:
    """Which callable reconciles which kind, resolved from ``<module>:<attr>`` on first use (so a worker starts
    even while that module is missing, and reports it on the tasks that need it)."""

    def __init__(self, target: str) -> None:
        self.target = target

    @cached_property
    def reconcilers(self) -> Mapping[str, Reconciler]:
        """The mapping ``target`` names, imported on first use (a failed import is tried again next time)."""
        module_name, _, attr = self.target.partition(":")
        return cast(Mapping[str, Reconciler], getattr(importlib.import_module(module_name), attr or "RECONCILERS"))

    def lookup(self, kind: str) -> Reconciler:
        """The reconciler of ``kind``; raises LookupError if none is registered."""
        try:
            return self.reconcilers[kind]
        except (KeyError, ModuleNotFoundError, AttributeError) as error:
            raise LookupError(f"no reconciler registered for kind {kind!r}: {error}") from error

    def preload(self) -> list[str]:
        """Import every registered reconciler now; returns the kinds that failed (logged, never fatal).

        Called in the worker parent before the prefork pool starts, so the children inherit the imported modules
        instead of each paying for them on its first task (importing jsonschema's format checkers compiles a
        grammar: about a second of CPU, which made the first reconcile of every child, and every claim queued
        behind it, slow).
        """
        failed = []
        try:
            kinds = list(self.reconcilers)
        except (ModuleNotFoundError, AttributeError) as error:
            log.warning("reconcilers not preloaded: %s", error)
            return ["*"]
        for kind in kinds:
            try:
                self.lookup(kind)
            except Exception as error:  # a broken kind must not stop the worker; its tasks report it when they run
                log.warning("reconciler for %s not preloaded: %s", kind, error)
                failed.append(kind)
        return failed


@cache
def registry(target: str | None = None) -> Registry:
    """The registry of ``target`` (``<module>:<attr>``; None or empty: :data:`RECONCILERS`), one per target."""
    return Registry(target or DEFAULT)

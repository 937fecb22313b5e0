"""Domain reconcilers, one per kind: ``reconcile(ctx, namespace, name) -> Result``; and the mapping of them.

A kind's ``reconcile`` is its declaration to the shared preamble
(:class:`~poolboy.reconcilers.preamble.ObjectReconciler`: read, ignore, finalize, converge), so that the engine
calls the preamble and the preamble the kind; the provider's, which neither finalizes nor ignores, is a plain
function. The engine looks reconcilers up by kind token (see :mod:`poolboy.keys`) in the mapping its runtime is
made with (:class:`engine.runtime.ProcessRuntime`): :data:`RECONCILERS`, unless the worker is given another
(``poolboy worker --reconcilers <module>:<attr>``, how the integration tests run trivial, instrumented reconcilers
in real workers). Each kind's module is imported on its first lookup so that importing this package stays cheap and
a broken kind cannot stop the others from loading; :func:`preload` imports them all at once (in the worker parent,
before the pool forks).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import cast

from poolboy import kinds
from poolboy.context import Context
from poolboy.result import Result

log = logging.getLogger(__name__)

Reconciler = Callable[[Context, str, str], Result]

#: kind token -> the module of its reconciler (:data:`poolboy.kinds.DECLARED`)
_MODULES = {kind.token: kind.reconciler for kind in kinds.DECLARED}


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


#: every kind's reconciler: the domain's
RECONCILERS: Mapping[str, Reconciler] = _LazyReconcilers()


def preload(reconcilers: Mapping[str, Reconciler]) -> list[str]:
    """Import every reconciler of ``reconcilers`` now; returns the kinds that failed (logged, never fatal).

    Called in the worker parent before the prefork pool starts, so the children inherit the imported modules
    instead of each paying for them on its first task (importing jsonschema's format checkers compiles a
    grammar: about a second of CPU, which made the first reconcile of every child, and every claim queued
    behind it, slow).
    """
    failed = []
    for kind in reconcilers:
        try:
            reconcilers[kind]
        except Exception as error:  # a broken kind must not stop the worker; its tasks report it when they run
            log.warning("reconciler for %s not preloaded: %s", kind, error)
            failed.append(kind)
    return failed

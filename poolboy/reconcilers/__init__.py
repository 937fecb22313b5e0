"""Domain reconcilers, one per kind: ``reconcile(ctx, namespace, name) -> Result``.

The engine looks reconcilers up here by kind token (see :mod:`poolboy.keys`). Modules are imported on first use
so that importing the registry stays cheap and a broken kind cannot stop the others from loading.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping

from poolboy.context import Context
from poolboy.result import Result

Reconciler = Callable[[Context, str, str], Result]

_MODULES = {
    "claim": "poolboy.reconcilers.claim",
    "handle": "poolboy.reconcilers.handle",
    "pool": "poolboy.reconcilers.pool",
    "provider": "poolboy.reconcilers.provider",
    "scaling": "poolboy.reconcilers.scaling",
}


class _LazyRegistry(Mapping[str, Reconciler]):
    def __getitem__(self, kind: str) -> Reconciler:
        return importlib.import_module(_MODULES[kind]).reconcile

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


RECONCILERS: Mapping[str, Reconciler] = _LazyRegistry()

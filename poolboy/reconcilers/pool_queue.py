"""What a pool shows of the claims that queue for it: how many wait, and per namespace how many wait and how many of
the pool's handles it holds (``status.queue``), from the engine's index of the pool's queue.

The namespaces listed are the ones with waiting claims, most waiting first, at most :data:`MAX_NAMESPACES`, so the
status stays small whatever the number of namespaces. Claims that draw from the pool's provider without naming the
pool queue in the provider's scope and are not counted here.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from poolboy.context import Context
from poolboy.domain.binding import scopes

MAX_NAMESPACES = 20


def report(ctx: Context, pool: dict[str, Any], status: dict[str, Any]) -> None:
    """Set ``status["queue"]`` (removed when nothing waits; kept as it was when the index cannot answer)."""
    state = ctx.index.queue_state(scopes.pool_scope(pool["metadata"]["name"])) if ctx.index is not None else None
    if state is None:
        return
    if not state.waiters:
        status.pop("queue", None)
        return
    waiting = Counter(w.namespace for w in state.waiters)
    listed = sorted(waiting, key=lambda ns: (-waiting[ns], ns))[:MAX_NAMESPACES]
    status["queue"] = {"waiting": len(state.waiters),
                       "namespaces": [{"namespace": ns, "waiting": waiting[ns], "bound": state.bound.get(ns, 0)}
                                      for ns in listed]}

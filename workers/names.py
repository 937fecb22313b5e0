"""Task and queue names: the wire contract between publishers (watcher, beat, workers) and workers."""

from __future__ import annotations

from poolboy.keys import KINDS, parse, queue_for

RECONCILE_PREFIX = "poolboy.reconcile."
PERIODIC_PREFIX = "poolboy.periodic."
PERIODIC_QUEUE = "periodic"
#: every queue a worker may consume: one per kind, plus beat's sweeps
QUEUES: tuple[str, ...] = (*(queue_for(kind) for kind in KINDS), PERIODIC_QUEUE)


def reconcile_task(kind: str) -> str:
    """``poolboy.reconcile.<kind>``: one task per kind, routed to the kind's queue."""
    return RECONCILE_PREFIX + kind


def route(key: str) -> tuple[str, str]:
    """(task name, queue) for a work key."""
    kind = parse(key).kind
    return reconcile_task(kind), queue_for(kind)

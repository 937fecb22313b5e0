"""Task and queue names: the wire contract between publishers (watcher, beat, workers) and workers."""

from __future__ import annotations

from poolboy import kinds
from poolboy.keys import parse, queue_for
from poolboy.kinds import Kind

RECONCILE_PREFIX = "poolboy.reconcile."
PERIODIC_PREFIX = "poolboy.periodic."
PERIODIC_QUEUE = "periodic"
#: every queue a worker may consume: one per kind, plus beat's sweeps
QUEUES: tuple[str, ...] = (*(kind.queue for kind in kinds.DECLARED), PERIODIC_QUEUE)
#: the order a worker that consumes several queues takes them in, strictly (the broker's ``queue_order_strategy``
#: is ``priority``): beat's sweeps first (a few cheap tasks a second, which keep deadlines and the lease reaper on
#: time), then claims, whose binds users wait for, before the work a bind causes (the bound handle, the pool's
#: refill), so a burst of claims binds before any replacement is provisioned
CONSUME_ORDER: tuple[str, ...] = (PERIODIC_QUEUE, *(kind.queue for kind in kinds.DECLARED))
#: ``--queues`` of a worker that consumes everything
DEFAULT_QUEUES = ",".join(CONSUME_ORDER)


def priority_lists(queue: str) -> tuple[str, ...]:
    """kombu's Redis transport keeps one list per priority step: ``q``, ``q\\x06\\x163``, ``q\\x06\\x166``, ..."""
    return (queue, *(f"{queue}\x06\x16{step}" for step in (3, 6, 9)))


#: every queue and the Redis lists that hold its messages (the queue-length gauges, :mod:`engine.metrics`)
QUEUE_LISTS: dict[str, tuple[str, ...]] = {queue: priority_lists(queue) for queue in QUEUES}


def reconcile_task(kind: str) -> str:
    """``poolboy.reconcile.<kind>``: one task per kind, routed to the kind's queue."""
    return RECONCILE_PREFIX + kind


def manage_task(kind: Kind) -> str:
    """``poolboy.periodic.manage_<queue>``: beat's periodic manage sweep of ``kind``."""
    return f"{PERIODIC_PREFIX}manage_{kind.queue}"


def route(key: str) -> tuple[str, str]:
    """(task name, queue) for a work key."""
    kind = parse(key).kind
    return reconcile_task(kind), queue_for(kind)

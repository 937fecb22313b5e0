"""A waiting claim's place in its queue: what it waits for, its position, and an expected wait.

Claims that may not create a handle (``disableCreation``) wait, per binding scope, in creation order
(:mod:`.candidates`, ``waiting|<scope>``). The claim shows its place in ``status.queue`` and in its
``Bound=False`` condition's message, e.g. ``Waiting for a ResourceHandle of ResourcePool labs: position 3 of 12,
expected wait about 4m (pool handles take about 2m to become ready). Handle creation is disabled.``

Writes are bounded: a claim's queue status is rewritten only when its position (or what it waits for) changed,
and at most once per ``POOLBOY_QUEUE_STATUS_INTERVAL`` seconds (30), however many binds move it; a claim whose
position changed sooner is looked at again when the interval is up. With N waiting claims that is at most
N writes per interval, not N per bind.

The expected wait is given only where it can be measured: the pools that serve the scope make up to
``min(minAvailable, maxUnready)`` handles at a time, each taking the pool's measured time to ready
(``status.timeToReadySeconds``), so position *p* waits about ``ceil(p / parallel) × timeToReady``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from poolboy.utils import timeutil


@dataclass(frozen=True)
class Place:
    waiting_for: str
    #: 1 is served next; None while the claim's namespace is at its cap
    position: int | None
    waiting: int
    expected_wait: timedelta | None = None
    time_to_ready: timedelta | None = None
    #: under a queue policy other than oldest first: why the claim stands where it does
    why: Why | None = None


@dataclass(frozen=True)
class Why:
    """What a queue policy ordered the claim by (:mod:`.queue_order`)."""

    order: str
    namespace: str
    holds: int
    priority: int | None = None
    cap: int | None = None
    ahead_in_namespace: int = 0


def waiting_for(scope: str) -> str:
    """What a scope's claims wait for, in words: ``pool=labs`` → ``ResourcePool labs``."""
    kind, _, name = scope.partition("=")
    if kind == "pool":
        return f"ResourcePool {name}"
    return f"ResourceProvider {name}" if name else "any ResourceHandle without a provider"


def expected_wait(position: int, pools: Iterable[Mapping[str, Any]]) -> tuple[timedelta, timedelta] | None:
    """``(expected wait, time to ready)`` for ``position`` from the pools serving the scope, or None when no pool
    makes handles for it or none has measured its time to ready."""
    parallel, slowest = 0, None
    for pool in pools:
        spec, status = pool.get("spec") or {}, pool.get("status") or {}
        min_available = int(spec.get("minAvailable") or 0)
        max_unready = spec.get("maxUnready")
        parallel += min(min_available, int(max_unready)) if max_unready is not None else min_available
        measured = status.get("timeToReadySeconds")
        if isinstance(measured, int | float) and not isinstance(measured, bool):
            slowest = measured if slowest is None else max(slowest, measured)
    if not parallel or slowest is None:
        return None
    ready = timedelta(seconds=max(1, round(slowest)))  # a handle ready at once still takes a moment
    return math.ceil(position / parallel) * ready, ready


def place(scope: str, position: int | None, waiting: int, pools: Iterable[Mapping[str, Any]],
          why: Why | None = None) -> Place:
    expected, ready = (expected_wait(position, pools) if position is not None else None) or (None, None)
    return Place(waiting_for(scope), position, waiting, expected, ready, why)


def record(where: Place, now: datetime) -> dict[str, Any]:
    """``status.queue``: what a UI reads, and what the ``Bound`` message is made of."""
    result: dict[str, Any] = {"waitingFor": where.waiting_for, "waiting": where.waiting,
                              "updated": timeutil.format_timestamp(now)}
    if where.position is not None:
        result["position"] = where.position
    if where.expected_wait is not None and where.time_to_ready is not None:
        result["expectedWait"] = timeutil.format_interval(where.expected_wait)
        result["timeToReady"] = timeutil.format_interval(where.time_to_ready)
    why = where.why
    if why is not None:
        result.update({"order": why.order, "namespace": why.namespace, "namespaceHolds": why.holds})
        if why.priority is not None:
            result["priority"] = why.priority
        if why.cap is not None:
            result["namespaceCap"] = why.cap
            result["namespaceWaitingAhead"] = why.ahead_in_namespace
    return result


def message(queue: Mapping[str, Any], creation_disabled: bool = True) -> str:
    """The ``Bound=False`` message of a waiting claim, from its ``status.queue``."""
    text = f"Waiting for a ResourceHandle of {queue.get('waitingFor')}: "
    if queue.get("position") is None and queue.get("namespaceCap") is not None:
        ahead = int(queue.get("namespaceWaitingAhead") or 0)
        text += (f"namespace {queue.get('namespace')} holds {queue.get('namespaceHolds')} of at most "
                 f"{queue['namespaceCap']} at once (maxPerNamespace)"
                 + (f" and {ahead} of its claims wait ahead of this one" if ahead else "")
                 + "; served when one of them goes")
    else:
        text += f"position {queue.get('position')} of {queue.get('waiting')}"
        text += _why(queue)
        if queue.get("expectedWait") and queue.get("timeToReady"):
            text += (f", expected wait about {queue['expectedWait']} (pool handles take about "
                     f"{queue['timeToReady']} to become ready)")
    return text + (". Handle creation is disabled." if creation_disabled else ".")


def _why(queue: Mapping[str, Any]) -> str:
    """What the position is ordered by, in words, under a policy other than oldest first."""
    parts = []
    if queue.get("priority") is not None:
        parts.append(f"priority {queue['priority']}")
    if queue.get("order") == "FairShare":
        parts.append(f"fair share: namespace {queue.get('namespace')} holds {queue.get('namespaceHolds')}")
    return f" ({'; '.join(parts)})" if parts else ""


def refresh(previous: Mapping[str, Any] | None, where: Place, now: datetime,
            interval: timedelta) -> tuple[bool, datetime | None]:
    """``(write now, look again at)``: write when the claim has no queue status yet, or its position changed and the
    last write is at least ``interval`` old; otherwise, if it changed, look again when the interval is up."""
    if not previous:
        return True, None
    cap = where.why.cap if where.why is not None else None
    if (previous.get("waitingFor"), previous.get("position"), previous.get("namespaceCap")) == \
            (where.waiting_for, where.position, cap):
        return False, None
    try:
        due = timeutil.parse_timestamp(previous.get("updated") or "") + interval
    except ValueError:
        return True, None
    return (True, None) if now >= due else (False, due)

"""How a pool or provider serves the claims that queue for its handles (``spec.queue``), parsed and checked, pure.

Without ``spec.queue`` (or with ``order: FIFO`` and nothing else) waiting claims are served oldest first, as upstream
Poolboy does. The policy can instead share handles fairly across namespaces, cap what one namespace holds, let
claims ask for a priority that rises with their wait, and bound how long a claim may queue
(:mod:`.queue_order` orders the queue under it; docs/pools.md explains each with an example).

The pool's policy governs the claims that name the pool; a provider's, the claims that draw from the provider (and
the claims of its pools when the pool sets none), so one administrator's setting covers both ways of asking.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum, StrEnum
from typing import Any, TypeVar

from poolboy.utils import timeutil

#: the claim label (after the domain's prefix) whose value names the priority class a claim asks for
PRIORITY_LABEL = "priority"
DEFAULT_AGING_INTERVAL = "10m"

E = TypeVar("E", bound=Enum)


class Order(StrEnum):
    FIFO = "FIFO"
    FAIR_SHARE = "FairShare"


class OverCap(StrEnum):
    WAIT = "Wait"
    REFUSE = "Refuse"


class OnTimeout(StrEnum):
    FAIL = "Fail"
    CREATE_HANDLE = "CreateHandle"


@dataclass(frozen=True)
class Priority:
    """Priority classes a claim may ask for with its ``D/priority`` label, and how fast waiting raises them."""

    classes: Mapping[str, int]
    default: int = 0
    aging_interval: timedelta = timedelta(minutes=10)

    def base(self, asked: str | None) -> int:
        """The class's number; the default for a claim that asks none or one the administrator did not define."""
        return self.classes.get(asked, self.default) if asked is not None else self.default

    def level(self, asked: str | None, waited: float) -> int:
        """The effective priority: the class's number plus one per ``aging_interval`` waited."""
        return self.base(asked) + math.floor(max(0.0, waited) / self.aging_interval.total_seconds())


@dataclass(frozen=True)
class QueuePolicy:
    """``spec.queue`` resolved; the default instance is upstream's oldest-first queue."""

    order: Order = Order.FIFO
    #: the namespace label or annotation whose number weighs a namespace's share (1 when absent or not a number)
    weight_key: str | None = None
    max_per_namespace: int | None = None
    over_cap: OverCap = OverCap.WAIT
    priority: Priority | None = None
    max_wait: timedelta | None = None
    on_timeout: OnTimeout = OnTimeout.FAIL
    source: str = field(default="", compare=False)  # "ResourcePool labs": where the policy was set, for messages

    @property
    def is_fifo(self) -> bool:
        """True when the queue is plain oldest-first, served by the index's own order."""
        return self.order is Order.FIFO and self.priority is None and self.max_per_namespace is None


FIFO = QueuePolicy()


def parse(raw: Any, source: str) -> QueuePolicy:
    """``spec.queue`` of the object ``source`` names; ``ValueError`` naming the field when it is wrong."""
    if raw is None:
        return QueuePolicy(source=source)
    if not isinstance(raw, Mapping):
        raise ValueError("spec.queue: must be an object")
    cap = raw.get("maxPerNamespace")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ValueError(f"spec.queue.maxPerNamespace: {cap!r} must be a positive integer")
    weight_key = raw.get("namespaceWeightKey")
    if weight_key is not None and (not isinstance(weight_key, str) or not weight_key):
        raise ValueError(f"spec.queue.namespaceWeightKey: {weight_key!r} must be a label or annotation key")
    return QueuePolicy(
        order=_choice(raw, "order", Order), weight_key=weight_key, max_per_namespace=cap,
        over_cap=_choice(raw, "overCap", OverCap), priority=_priority(raw.get("priority")),
        max_wait=_interval(raw, "maxWait"), on_timeout=_choice(raw, "onTimeout", OnTimeout), source=source)


def _choice(raw: Mapping[str, Any], key: str, kind: type[E]) -> E:
    value = raw.get(key)
    if value is None:
        return next(iter(kind))
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"spec.queue.{key}: {value!r} must be one of {', '.join(str(e.value) for e in kind)}") \
            from None


def _interval(raw: Mapping[str, Any], key: str, prefix: str = "spec.queue") -> timedelta | None:
    value = raw.get(key)
    if value is None:
        return None
    try:
        parsed = timeutil.parse_interval(str(value))
    except ValueError as error:
        raise ValueError(f"{prefix}.{key}: {error}") from None
    if parsed.total_seconds() <= 0:
        raise ValueError(f"{prefix}.{key}: must be positive")
    return parsed


def _priority(raw: Any) -> Priority | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValueError("spec.queue.priority: must be an object")
    classes = raw.get("classes") or {}
    if not isinstance(classes, Mapping) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in classes.values()):
        raise ValueError("spec.queue.priority.classes: must map label values to integers")
    default = raw.get("default", 0)
    if isinstance(default, bool) or not isinstance(default, int):
        raise ValueError(f"spec.queue.priority.default: {default!r} must be an integer")
    aging = _interval({"agingInterval": raw.get("agingInterval") or DEFAULT_AGING_INTERVAL}, "agingInterval",
                      "spec.queue.priority")
    assert aging is not None
    return Priority({str(k): int(v) for k, v in classes.items()}, default, aging)


def weight(metadata: Mapping[str, Any] | None, key: str | None) -> float:
    """A namespace's weight under ``key`` (its label, else its annotation): a positive number, else 1."""
    if not key or not metadata:
        return 1.0
    raw = (metadata.get("labels") or {}).get(key) or (metadata.get("annotations") or {}).get(key)
    try:
        value = float(raw) if raw is not None else 1.0
    except ValueError:
        return 1.0
    return value if math.isfinite(value) and value > 0 else 1.0

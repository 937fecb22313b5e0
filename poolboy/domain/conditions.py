"""``status.conditions`` in the ``metav1.Condition`` shape, so ``kubectl wait --for=condition=X`` works.

``lastTransitionTime`` changes only when a condition's status flips, as Kubernetes conventions require; a
reconcile that recomputes the same condition leaves the list byte-for-byte unchanged (no write, no event).
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from poolboy.utils.text import shorten

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
def _fmt(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(conditions: list[dict[str, Any]] | None, type_: str, status: bool | str | None, reason: str,
                  message: str, now: datetime, observed_generation: int | None = None) -> list[dict[str, Any]]:
    """Return a new condition list with ``type_`` set; other conditions are kept in order."""
    if isinstance(status, bool):
        status = TRUE if status else FALSE
    elif status is None:
        status = UNKNOWN
    result = [copy.deepcopy(c) for c in (conditions or [])]
    current = next((c for c in result if c.get("type") == type_), None)
    new: dict[str, Any] = {"type": type_, "status": status, "reason": reason, "message": shorten(message)}
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    if current is None:
        new["lastTransitionTime"] = _fmt(now)
        result.append(new)
        return result
    new["lastTransitionTime"] = (current.get("lastTransitionTime") or _fmt(now)) \
        if current.get("status") == status else _fmt(now)
    current.clear()
    current.update(new)
    return result


def get_condition(conditions: list[dict[str, Any]] | None, type_: str) -> dict[str, Any] | None:
    return next((c for c in (conditions or []) if c.get("type") == type_), None)


def is_true(conditions: list[dict[str, Any]] | None, type_: str) -> bool:
    condition = get_condition(conditions, type_)
    return bool(condition and condition.get("status") == TRUE)

"""``status.conditions`` in the ``metav1.Condition`` shape, so ``kubectl wait --for=condition=X`` works.

``lastTransitionTime`` changes only when a condition's status flips, as Kubernetes conventions require; a
reconcile that recomputes the same condition leaves the list byte-for-byte unchanged (no write, no event).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from poolboy.utils.text import shorten

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


def _copied(conditions: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """A copy the caller may change: a condition is flat (strings and a generation), so a copy of each dict is a
    deep copy, at a fraction of ``copy.deepcopy``'s cost (this runs twice per claim run)."""
    return [dict(c) for c in (conditions or [])]


def _fmt(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(conditions: list[dict[str, Any]] | None, type_: str, status: bool | str | None, reason: str,
                  message: str, now: datetime, observed_generation: int | None = None,
                  stored: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Return a new condition list with ``type_`` set; other conditions are kept in order.

    ``stored``: the conditions as the object carries them, for a run that may set ``type_`` more than once (True,
    then False when a later step fails): the transition is measured against what is stored, not the run's draft."""
    if isinstance(status, bool):
        status = TRUE if status else FALSE
    elif status is None:
        status = UNKNOWN
    result = _copied(conditions)
    current = next((c for c in result if c.get("type") == type_), None)
    before = current if stored is None else get_condition(stored, type_)
    new: dict[str, Any] = {"type": type_, "status": status, "reason": reason, "message": shorten(message)}
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    kept = before.get("lastTransitionTime") if before is not None and before.get("status") == status else None
    new["lastTransitionTime"] = kept or _fmt(now)
    if current is None:
        result.append(new)
        return result
    current.clear()
    current.update(new)
    return result


def observe(conditions: list[dict[str, Any]] | None, types: set[str] | frozenset[str],
            generation: int) -> list[dict[str, Any]]:
    """Return a new list in which the conditions of ``types`` carry ``observedGeneration = generation``.

    Why: a reconcile may write its object's spec (the operator's own change, e.g. a claim's lifespan end reset on
    first ready) before it writes the status it computed for that spec. The API server gives the spec write a new
    ``metadata.generation``; the conditions the run decided describe exactly that spec, so they must say so — the
    watch event of the run's own write does not run the object again, and ``kubectl wait --for=condition=…``
    waits until a condition's ``observedGeneration`` equals ``metadata.generation``. Only the conditions the run
    decided are stamped: one it left alone still describes the older spec it was decided for.
    """
    result = _copied(conditions)
    for condition in result:
        if condition.get("type") in types:
            condition["observedGeneration"] = generation
    return result


def ordered(conditions: list[dict[str, Any]] | None, order: tuple[str, ...]) -> list[dict[str, Any]]:
    """The conditions with the types of ``order`` first, in that order, then the others as they were.

    Why: a printer column's JSONPath filter (``[?(@.status=="False")]``) shows its first match, so the order of
    the list decides which condition a column explains the object by."""
    rank = {type_: index for index, type_ in enumerate(order)}
    return sorted(conditions or [], key=lambda c: rank.get(c.get("type") or "", len(order)))


def get_condition(conditions: list[dict[str, Any]] | None, type_: str) -> dict[str, Any] | None:
    return next((c for c in (conditions or []) if c.get("type") == type_), None)


def is_true(conditions: list[dict[str, Any]] | None, type_: str) -> bool:
    condition = get_condition(conditions, type_)
    return bool(condition and condition.get("status") == TRUE)

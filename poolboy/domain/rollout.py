"""Rolling replacement of a pool's outdated unbound handles (``spec.updateStrategy``), pure.

A pool's handles record the revision they were built from (:mod:`poolboy.domain.pool_revision`). With
``updateStrategy.type: Replace`` the pool replaces the unbound handles of older revisions the way a Deployment
rolls its pods: it may keep up to ``maxSurge`` handles above ``minAvailable`` while outdated ones remain (new
handles are made first), and deletes outdated handles only while the ready unbound count stays at or above
``minAvailable - maxUnavailable``. Unready outdated handles serve nobody, so they go at once. Both limits are an
integer or a percentage of ``minAvailable`` (``maxUnavailable`` rounds down, ``maxSurge`` up, as in Deployments);
when both come to 0 the surge is 1, or the rollout could never start. ``Keep`` (the default) replaces nothing, as
upstream Poolboy: taking over an existing cluster changes no handle.

Only unbound handles are ever planned: a bound handle belongs to its claim, and an ignored one to its administrator.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

KEEP, REPLACE = "Keep", "Replace"
DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_MAX_SURGE = "25%"
_PERCENT = re.compile(r"^([0-9]+)%$")


@dataclass(frozen=True)
class Strategy:
    """``spec.updateStrategy`` resolved against the pool's ``minAvailable``."""

    replace: bool = False
    max_unavailable: int = 0
    max_surge: int = 0


@dataclass(frozen=True)
class Member:
    """What the plan needs of one unbound handle."""

    name: str
    revision: str | None
    ready: bool
    created: str = ""


@dataclass(frozen=True)
class Plan:
    """This run's step: handles to delete now, and how many handles the pool may keep above ``minAvailable``."""

    delete: tuple[str, ...] = ()
    surge: int = 0


def scaled(value: Any, total: int, *, round_up: bool, field: str) -> int:
    """An int-or-percentage against ``total`` (Kubernetes' ``GetScaledValueFromIntOrPercent``)."""
    if isinstance(value, bool):
        raise ValueError(f"{field}: {value!r} is neither an integer nor a percentage")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{field}: {value} is negative")
        return value
    match = _PERCENT.match(str(value).strip())
    if not match:
        raise ValueError(f"{field}: {value!r} is neither an integer nor a percentage such as '25%'")
    share = int(match.group(1)) * total / 100
    return math.ceil(share) if round_up else math.floor(share)


def strategy(spec: Mapping[str, Any]) -> Strategy:
    """The pool's update strategy; ``ValueError`` naming the field when it cannot be understood."""
    raw = spec.get("updateStrategy") or {}
    if not isinstance(raw, Mapping):
        raise ValueError("spec.updateStrategy: must be an object")
    kind = raw.get("type") or KEEP
    if kind not in (KEEP, REPLACE):
        raise ValueError(f"spec.updateStrategy.type: {kind!r} is not one of 'Keep', 'Replace'")
    if kind == KEEP:
        return Strategy()
    total = int(spec.get("minAvailable") or 0)
    unavailable = scaled(raw.get("maxUnavailable", DEFAULT_MAX_UNAVAILABLE), total, round_up=False,
                         field="spec.updateStrategy.maxUnavailable")
    surge = scaled(raw.get("maxSurge", DEFAULT_MAX_SURGE), total, round_up=True,
                   field="spec.updateStrategy.maxSurge")
    return Strategy(replace=True, max_unavailable=unavailable, max_surge=surge or (0 if unavailable else 1))


def outdated(members: Iterable[Member], current: str) -> list[Member]:
    return [m for m in members if m.revision != current]


def plan(members: list[Member], current: str, min_available: int, chosen: Strategy) -> Plan:
    """The next step of a rollout (see the module docstring); nothing to do under ``Keep`` or when up to date."""
    old = outdated(members, current)
    if not chosen.replace or not old:
        return Plan()
    ready = sum(1 for m in members if m.ready)
    budget = max(0, ready - (min_available - chosen.max_unavailable))
    oldest_first = sorted((m for m in old if m.ready), key=lambda m: (m.created or "~", m.name))
    victims = [m.name for m in old if not m.ready] + [m.name for m in oldest_first[:budget]]
    return Plan(delete=tuple(victims), surge=min(chosen.max_surge, len(old) - len(victims)))


def up_to_date(outdated_count: int, total: int, chosen: Strategy) -> tuple[bool, str, str]:
    """``(status, reason, message)`` of the pool's ``UpToDate`` condition."""
    if not outdated_count:
        return True, "UpToDate", f"All {total} unbound handles are built from the current pool and provider specs."
    if chosen.replace:
        return False, "RollingOut", (
            f"Replacing {outdated_count} of {total} unbound handles built from an older pool or provider spec "
            f"(maxUnavailable {chosen.max_unavailable}, maxSurge {chosen.max_surge}).")
    return False, "Outdated", (
        f"{outdated_count} of {total} unbound handles were built from an older pool or provider spec; "
        "updateStrategy Keep leaves them as they are (type Replace rolls them).")

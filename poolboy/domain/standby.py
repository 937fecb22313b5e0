"""Standby rules, pure (docs/behaviour.md#standby): a pool's effective standby spec, which of its unbound handles run,
a handle's next state, and the merge patches that put a resource on standby and restore it.

A pool uses standby only when it has ``spec.standby``; its fields override its provider's ``spec.standby`` (provider
mode: ``spec.provider``; resources mode: the first resource's provider).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from poolboy.domain.handle_state import CLEANING, RESUMING, RUNNING, STANDBY
from poolboy.utils import templating, timeutil

#: a resume that takes longer than this replaces the handle, unless the standby spec says otherwise
DEFAULT_RESUME_TIMEOUT = timedelta(minutes=10)

#: the Synced reason of a pool (and a handle) whose standby spec cannot be used
INVALID = "InvalidStandby"

_FIELDS = ("patch", "resumePatch", "resumedCheck", "resumeTimeout")


class InvalidStandby(ValueError):
    """The standby spec cannot be used; the message says why, for the pool's Synced condition."""


@dataclass(frozen=True)
class StandbySpec:
    """A pool's standby as its handles apply it: ``running`` handles kept running, the rest under ``patch``."""

    running: int
    patch: dict[str, Any]
    resume_patch: dict[str, Any] | None
    resumed_check: str | None
    resume_timeout: timedelta


def provider_name(pool: Mapping[str, Any]) -> str | None:
    """The provider whose ``spec.standby`` the pool's fields override."""
    spec = pool.get("spec") or {}
    if spec.get("provider"):
        return (spec["provider"] or {}).get("name")
    resources = spec.get("resources") or []
    return ((resources[0].get("provider") or {}).get("name")) if resources else None


def uses_standby(pool: Mapping[str, Any] | None) -> bool:
    return isinstance(((pool or {}).get("spec") or {}).get("standby"), dict)


def effective(pool_standby: Mapping[str, Any] | None, provider_standby: Mapping[str, Any] | None) -> StandbySpec | None:
    """The pool's fields over the provider's; None when the pool has no ``spec.standby``. ``InvalidStandby`` when
    no patch is declared anywhere, a timeout does not parse, or a template does not compile."""
    if not isinstance(pool_standby, Mapping):
        return None
    merged = {key: (provider_standby or {}).get(key) for key in _FIELDS}
    merged.update({key: pool_standby[key] for key in _FIELDS if pool_standby.get(key) is not None})
    patch = merged["patch"]
    if not isinstance(patch, dict) or not patch:
        raise InvalidStandby("standby has no patch: set spec.standby.patch on the pool or its ResourceProvider")
    raw_timeout = merged["resumeTimeout"]
    try:
        timeout = timeutil.parse_interval(raw_timeout) if raw_timeout is not None else DEFAULT_RESUME_TIMEOUT
    except ValueError as error:
        raise InvalidStandby(f"standby.resumeTimeout: {error}") from error
    if timeout <= timedelta(0):
        raise InvalidStandby(f"standby.resumeTimeout: {raw_timeout!r} must be longer than 0s")
    for field in ("patch", "resumePatch"):
        problem = _template_problem(merged[field])
        if problem:
            raise InvalidStandby(f"standby.{field}: {problem}")
    check = merged["resumedCheck"]
    problem = templating.syntax_error(check, expression=True) if check else None
    if problem:
        raise InvalidStandby(f"standby.resumedCheck: {problem}")
    resume_patch = merged["resumePatch"]
    return StandbySpec(running=int(pool_standby.get("running") or 0), patch=copy.deepcopy(patch),
                       resume_patch=copy.deepcopy(resume_patch) if isinstance(resume_patch, dict) else None,
                       resumed_check=check or None, resume_timeout=timeout)


def _template_problem(value: Any) -> str | None:
    """The first string of ``value`` that does not compile as a template."""
    if isinstance(value, str):
        return templating.syntax_error(value)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((p for p in map(_template_problem, items) if p), None)


# --- the pool's decision ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """What the pool's decision needs of one unbound handle."""

    name: str
    created: str
    ready: bool
    state: str | None
    #: the pool's last wish (its ``spec.standby``), None before the pool placed it
    wants_standby: bool | None


def _runs(member: Member) -> bool:
    """Running or on its way back to running: it counts toward ``running``."""
    return member.state in (None, RUNNING, RESUMING) and not member.wants_standby


def eligible(member: Member) -> bool:
    """A handle the decision places: ready, or already on standby (or resuming from it); never one cleaning."""
    return member.state != CLEANING and (member.ready or member.state in (STANDBY, RESUMING))


def decide(members: Sequence[Member], running: int) -> dict[str, bool]:
    """The desired ``spec.standby`` of each eligible unbound handle: ``running`` of them run (those running first,
    then those resuming, then the oldest), the rest go on standby. Handles still provisioning are left out."""
    order = {RUNNING: 0, None: 0, RESUMING: 1, STANDBY: 2}
    placed = sorted((m for m in members if eligible(m)),
                    key=lambda m: (0 if _runs(m) else 1, order.get(m.state, 2), m.created, m.name))
    return {m.name: index >= running for index, m in enumerate(placed)}


def changes(members: Sequence[Member], running: int) -> dict[str, bool]:
    """Only the desired values that differ from what each handle carries (a handle not placed yet gets one)."""
    return {name: want for name, want in decide(members, running).items()
            if want != next(m.wants_standby for m in members if m.name == name)}


def counts(members: Sequence[Member]) -> dict[str, int]:
    """The pool's ``resourceHandleCount.running`` and ``.standby``: unbound handles by state (a handle not yet put
    on standby runs)."""
    standby = sum(1 for m in members if m.state == STANDBY)
    running = sum(1 for m in members if m.state not in (STANDBY, CLEANING) and m.ready)
    return {"running": running, "standby": standby}


# --- the handle's state ----------------------------------------------------------------------------------------


def next_state(state: str | None, *, wants_standby: bool, bound: bool, ready: bool, resumed: bool) -> str:
    """Where a handle of a pool with standby goes next: a ready, unbound handle the pool puts on standby goes there;
    a standby handle bound or asked to run resumes; a resuming handle runs once its resources pass the check."""
    if state == STANDBY:
        return RESUMING if bound or not wants_standby else STANDBY
    if state == RESUMING:
        return RUNNING if resumed else RESUMING
    return STANDBY if wants_standby and not bound and ready else RUNNING


def replaced_values(live: Mapping[str, Any] | None, patch: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that restores what ``patch`` replaces in ``live`` (absent keys restore as ``None``, which a
    merge patch removes)."""
    restore: dict[str, Any] = {}
    for key, value in patch.items():
        current = (live or {}).get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            restore[key] = replaced_values(current, value)
        else:
            restore[key] = copy.deepcopy(current)
    return restore


def holds(live: Mapping[str, Any] | None, patch: Mapping[str, Any]) -> bool:
    """Whether ``live`` already has what the merge patch ``patch`` sets (``None``: the key is absent)."""
    for key, value in patch.items():
        current = (live or {}).get(key)
        if value is None:
            if key in (live or {}):
                return False
        elif isinstance(value, dict):
            if not isinstance(current, dict) or not holds(current, value):
                return False
        elif current != value:
            return False
    return True


def resuming_status(now: datetime, timeout: timedelta) -> dict[str, str]:
    """``status.resuming``: when the resume began and the deadline past which a bound handle is replaced."""
    return {"since": timeutil.format_timestamp(now), "deadline": timeutil.format_timestamp(now + timeout)}


def resume_deadline(handle: Mapping[str, Any]) -> datetime | None:
    """The deadline of a handle resuming, None when it is not resuming."""
    status = handle.get("status") or {}
    if status.get("state") != RESUMING:
        return None
    try:
        return timeutil.parse_timestamp(str((status.get("resuming") or {}).get("deadline") or ""))
    except ValueError:
        return None


def resume_timed_out(handle: Mapping[str, Any], now: datetime) -> bool:
    """A handle still resuming past its deadline: its claim is served by another handle."""
    deadline = resume_deadline(handle)
    return deadline is not None and deadline <= now

"""What the plugin found about one claim: the objects it leads to, each as read or as the reason it could not be.

A user with ``edit`` in the claim's namespace may read the claim but not the handles, pools and providers in the
operator's namespace, nor managed resources elsewhere; an :class:`Unreadable` stands in for each of those, so the
trace and the explanation carry on with what the claim's status mirrors of them (docs/behaviour.md#claim-status).
Everything here is plain data, so :mod:`.trace` and :mod:`.why` are pure functions of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

Object = dict[str, Any]

#: why a read failed, in the words the trace shows (other failures: the API server's status and reason)
FORBIDDEN, NOT_FOUND = "forbidden", "not found"

#: a claim's conditions in the order they are met: processed, then bound, then ready, then healthy
CLAIM_CONDITIONS = ("Synced", "Bound", "Ready", "Healthy")


@dataclass(frozen=True)
class Unreadable:
    """An object the plugin could not read, and why: ``forbidden``, ``not found`` or the API server's answer."""

    kind: str
    namespace: str | None
    name: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"cannot read {self.kind} {where}: {self.reason}"


Read = Object | Unreadable


@dataclass(frozen=True)
class ManagedResource:
    """One of the handle's resources: what Poolboy records of it (``entry``: the handle's ``status.resources[i]``
    over the claim's, which adds the mirrored ``state``) and the live object (None: not created yet)."""

    entry: Object
    live: Read | None = None

    @property
    def reference(self) -> Object:
        return self.entry.get("reference") or {}

    @property
    def object(self) -> Object | None:
        """The live object when it could be read, else the copy the claim's status keeps (``state``)."""
        if isinstance(self.live, dict):
            return self.live
        state = self.entry.get("state")
        return state if isinstance(state, dict) else None


@dataclass(frozen=True)
class Observed:
    """A claim and what it leads to. ``handle`` is None while the claim is unbound, ``pool`` when no pool is involved
    (or the handle, which names it, could not be read)."""

    claim: Object
    handle: Read | None = None
    pool: Read | None = None
    providers: list[Read] = field(default_factory=list)
    resources: list[ManagedResource] = field(default_factory=list)

    @property
    def unreadable(self) -> list[Unreadable]:
        """Every read that failed, in the order the trace shows them."""
        reads: list[Read | None] = [self.handle, self.pool, *self.providers, *(r.live for r in self.resources)]
        return [read for read in reads if isinstance(read, Unreadable)]


def status(obj: Object | None) -> Object:
    return (obj or {}).get("status") or {}


def conditions(obj: Object | None) -> list[Object]:
    found = status(obj).get("conditions")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def condition(obj: Object | None, type_: str) -> Object | None:
    return next((c for c in conditions(obj) if c.get("type") == type_), None)


def first_unmet(obj: Object | None, order: Iterable[str] = CLAIM_CONDITIONS) -> Object | None:
    """The first condition of ``order`` that is not True (a missing one is not unmet: it is not decided yet)."""
    for type_ in order:
        found = condition(obj, type_)
        if found is not None and found.get("status") != "True":
            return found
    return None


def reference_of(obj: Object) -> tuple[str, str | None, str]:
    """``(kind, namespace, name)`` of a Kubernetes object."""
    metadata = obj.get("metadata") or {}
    return str(obj.get("kind") or ""), metadata.get("namespace"), str(metadata.get("name") or "")

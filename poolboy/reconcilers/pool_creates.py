"""A pool's creates, named in its status before they are made, so that two runs of one pool at once (a Redis loss
ends the lease of a run that goes on while another worker starts the pool) do not both fill the same deficit.

A run that is to create handles first writes their names to ``status.pendingHandles`` (a status replace with the
pool's resourceVersion as precondition, so of two runs that counted the same deficit only one gets to name it: the
other meets a Conflict and counts again, from the API server, with the first run's names in the status). A run counts
every named handle the API server does not list yet as one that is coming, creates it (a 409 means it exists: made by
the run that named it, or by this one before a lost answer), and clears the names in its last status write. The names
never change, so repeating a create is the same create.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from poolboy import kube
from poolboy.context import Context
from poolboy.domain import pool_handles
from poolboy.domain.handle_factory import handle_name
from poolboy.domain.provider import Provider

#: the pool status field that names the handles a run is creating
FIELD = "pendingHandles"


@dataclass(frozen=True)
class Pending:
    """A handle a pool run named before creating it, and the scaling it is made for (None: the pool's own)."""

    name: str
    scaling: str | None = None

    def entry(self) -> dict[str, str]:
        return {"name": self.name, **({"scaling": self.scaling} if self.scaling else {})}


def pending(pool: dict[str, Any]) -> list[Pending]:
    """The creates the pool's status names (an earlier or a concurrent run's)."""
    entries = (pool.get("status") or {}).get(FIELD) or []
    return [Pending(e["name"], e.get("scaling")) for e in entries if isinstance(e, dict) and e.get("name")]


def coming(named: Iterable[Pending], listed: Iterable[dict[str, Any]]) -> list[Pending]:
    """The named creates the API server's list of unbound handles does not have yet: counted as on their way."""
    names = {h["metadata"]["name"] for h in listed}
    return [p for p in named if p.name not in names]


def placeholder(entry: Pending) -> dict[str, Any]:
    """A named handle that is not there yet, as the count sees it: unbound and not ready."""
    return {"metadata": {"name": entry.name}, "status": {}}


def name(ctx: Context, pool: dict[str, Any], entries: list[Pending]) -> dict[str, Any]:
    """Write ``entries`` as the pool's pending creates; the pool as written (a Conflict when another run wrote
    first)."""
    status = {**(pool.get("status") or {}), FIELD: [e.entry() for e in entries]}
    return ctx.kube.replace_status({**pool, "status": status})


def fresh(count: int, scaling: str | None = None) -> list[Pending]:
    return [Pending(handle_name(), scaling) for _ in range(count)]


def create(ctx: Context, pool: dict[str, Any], providers: list[Provider],
           entries: list[Pending]) -> list[dict[str, Any]]:
    """Create the named handles; those that exist already (409) are not created twice."""
    created = []
    for entry in entries:
        body = pool_handles.build_pool_handle(ctx, pool, providers, scaling_name=entry.scaling, name=entry.name)
        try:
            created.append(ctx.kube.create(body))
        except kube.AlreadyExists:
            continue
    return created


def cleared(status: dict[str, Any]) -> dict[str, Any]:
    """The pool's last status write of a run: its creates are made, none pending."""
    status.pop(FIELD, None)
    return status

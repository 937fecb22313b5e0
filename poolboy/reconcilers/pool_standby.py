"""The pool's side of standby (docs/behaviour.md#standby): which unbound handles run, set as each handle's desired
``spec.standby`` (the handle reconciler realises it), and the running/standby counts of the pool's status.

The work queue runs one reconcile per pool at a time, so the decision is race-free among the pool's runs; a bind is
not the pool's, so each write carries the resourceVersion that was read unbound: a handle bound meanwhile fails it
(the bind wins) and is looked at again next run. The decision is made from the cheap view (the index's summaries);
only a run whose view shows a handle to change reads the pool's unbound handles whole, decides again from them and
writes. An unbound handle the pool asked to run that is still resuming past its deadline is deleted, and the pool
makes a new one. A pool without ``spec.standby`` costs nothing here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import standby as rules
from poolboy.domain.handle_state import RESUMING, state_of
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.observability import observe_handle_transition
from poolboy.reconcilers import pool_members

log = logging.getLogger(__name__)


#: how soon the pool places again a handle that changed between its read and the pool's write
PLACE_AGAIN = timedelta(seconds=1)


def checked(pool: dict[str, Any], providers: list[Provider]) -> tuple[rules.StandbySpec | None, str | None]:
    """The pool's effective standby spec (None without ``spec.standby``), or what is wrong with it: then every
    handle runs (the pool goes on filling) and the message is the pool's ``Synced=False`` ``InvalidStandby``."""
    if not rules.uses_standby(pool):
        return None, None
    name = rules.provider_name(pool)
    provider = next((p for p in providers if p.name == name), None)
    try:
        return rules.effective(pool["spec"]["standby"], provider.spec.get("standby") if provider else None), None
    except rules.InvalidStandby as error:
        return None, f"{error}; every handle of the pool runs until it is fixed."


def _member(handle: dict[str, Any]) -> rules.Member:
    return rules.Member(name=handle["metadata"]["name"], created=handle["metadata"].get("creationTimestamp") or "",
                        ready=(handle.get("status") or {}).get("ready") is True, state=state_of(handle),
                        wants_standby=(handle.get("spec") or {}).get("standby"))


@dataclass(frozen=True)
class Placed:
    """What placing the pool's handles did: the pool as last written, its unbound handles less those deleted (they
    did not resume in time), the keys to wake, and when the next handle still resuming reaches its deadline."""

    pool: dict[str, Any]
    handles: list[dict[str, Any]]
    wake: list[str] = field(default_factory=list)
    next_at: datetime | None = None


def place(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]],
          spec: rules.StandbySpec | None) -> Placed:
    """Delete the unbound handles that did not resume by their deadline, then set the desired ``spec.standby`` of
    those whose place changes."""
    if spec is None:
        return Placed(pool, handles)
    placed = _delete_stuck(ctx, pool, handles)
    if not rules.changes([_member(h) for h in placed.handles], spec.running):
        return placed
    whole = pool_members.unbound_handles(ctx, pool["metadata"]["name"], reader=ctx.api_reader)
    by_name = {h["metadata"]["name"]: h for h in whole}
    again = False
    for name, wants in rules.changes([_member(h) for h in whole], spec.running).items():
        handle = by_name[name]
        metadata = handle["metadata"]
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": metadata["resourceVersion"]},
               {"op": "add", "path": "/spec/standby", "value": wants}]
        try:
            ctx.kube.patch_json(handle["apiVersion"], RESOURCE_HANDLE, name, metadata["namespace"], ops)
        except (kube.Conflict, kube.Invalid, kube.NotFound) as error:  # bound or changed meanwhile: next run
            log.info("pool %s: handle %s changed before its standby was set (%s)", pool["metadata"]["name"], name,
                     error)
            again = True
            continue
        placed.wake.append(keys.make(keys.HANDLE, metadata["namespace"], name))
    if not again:
        return placed
    # the handle's own change need not wake the pool (a change its status does not show): place it again soon
    soon = ctx.now + PLACE_AGAIN
    return replace(placed, next_at=soon if placed.next_at is None else min(placed.next_at, soon))


def _delete_stuck(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]]) -> Placed:
    """An unbound handle the pool asked to run that is still resuming past its deadline is deleted (the pool makes
    a new one), with an Event on the pool; only a pool with a handle resuming reads its handles whole for this."""
    if not any(state_of(h) == RESUMING for h in handles):
        return Placed(pool, handles)
    deadlines: list[datetime] = []

    def stuck(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        deadlines.extend(d for d in map(rules.resume_deadline, found) if d is not None and d > ctx.now)
        return [h for h in found if rules.resume_timed_out(h, ctx.now)]

    name = pool["metadata"]["name"]
    pool, deleted, wake = pool_members.delete_unbound(ctx, pool, stuck, "did not resume in time")
    for handle in sorted(deleted):
        ctx.events.emit(pool, "ResumeTimeout", f"Deleted ResourceHandle {handle}: it did not resume from standby "
                                               f"by its deadline; a new handle replaces it.", type="Warning")
        observe_handle_transition(name, "Replaced")
    return Placed(pool, [h for h in handles if h["metadata"]["name"] not in deleted], wake,
                  min(deadlines) if deadlines else None)


def report(pool: dict[str, Any], status: dict[str, Any], handles: list[dict[str, Any]]) -> None:
    """``resourceHandleCount.running`` and ``.standby`` of a pool with standby (none for any other pool)."""
    if not rules.uses_standby(pool):
        return
    status.setdefault("resourceHandleCount", {}).update(rules.counts([_member(h) for h in handles]))

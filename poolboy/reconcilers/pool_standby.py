"""The pool's side of standby (docs/behaviour.md#standby): which unbound handles run, set as each handle's desired
``spec.standby`` (the handle reconciler realises it), and the running/standby counts of the pool's status.

The work queue runs one reconcile per pool at a time, so the decision is race-free among the pool's runs; a bind is
not the pool's, so each write carries the resourceVersion that was read unbound: a handle bound meanwhile fails it
(the bind wins) and is looked at again next run. The decision is made from the cheap view (the index's summaries);
only a run whose view shows a handle to change reads the pool's unbound handles whole, decides again from them and
writes. A pool without ``spec.standby`` costs nothing here.
"""

from __future__ import annotations

import logging
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import standby as rules
from poolboy.domain.handle_state import state_of
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers import pool_members

log = logging.getLogger(__name__)


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


def place(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]],
          spec: rules.StandbySpec | None) -> list[str]:
    """Set the desired ``spec.standby`` of the unbound handles whose place changes; the keys of those written."""
    if spec is None or not rules.changes([_member(h) for h in handles], spec.running):
        return []
    whole = pool_members.unbound_handles(ctx, pool["metadata"]["name"], reader=ctx.api_reader)
    by_name = {h["metadata"]["name"]: h for h in whole}
    written = []
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
            continue
        written.append(keys.make(keys.HANDLE, metadata["namespace"], name))
    return written


def report(pool: dict[str, Any], status: dict[str, Any], handles: list[dict[str, Any]]) -> None:
    """``resourceHandleCount.running`` and ``.standby`` of a pool with standby (none for any other pool)."""
    if not rules.uses_standby(pool):
        return
    status.setdefault("resourceHandleCount", {}).update(rules.counts([_member(h) for h in handles]))

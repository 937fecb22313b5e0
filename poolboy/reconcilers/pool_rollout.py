"""The pool's rollover step and what its status says about it (``spec.updateStrategy``).

:mod:`poolboy.domain.rollout` decides; this module reads, deletes and reports. The plan is made twice: first from
the cheap view the pool run already has (index summaries), only to see whether anything is to be done, then — when
it is — from the pool's unbound handles read whole, whose resourceVersions the deletes are conditional on, so a
handle bound in between is never deleted (:func:`poolboy.reconcilers.pool_members.delete_unbound`). The pool's run
is serialised by the work queue and its own deletes are written through to the shared cache, so the next run never
counts a handle it already deleted as ready.
"""

from __future__ import annotations

from typing import Any

from poolboy.context import Context
from poolboy.domain import conditions, pool_revision, rollout
from poolboy.reconcilers import pool_members
from poolboy.result import PermanentError

CONDITION = "UpToDate"


def strategy(pool: dict[str, Any]) -> rollout.Strategy:
    """The pool's update strategy; ``InvalidUpdateStrategy`` (user-fixable) when it cannot be understood."""
    try:
        return rollout.strategy(pool.get("spec") or {})
    except ValueError as error:
        raise PermanentError("InvalidUpdateStrategy", str(error)) from None


def members(ctx: Context, handles: list[dict[str, Any]]) -> list[rollout.Member]:
    return [rollout.Member(name=h["metadata"]["name"], revision=pool_revision.of_handle(h, ctx.settings.domain),
                           ready=(h.get("status") or {}).get("ready") is True,
                           created=h["metadata"].get("creationTimestamp") or "") for h in handles]


def replace_outdated(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]], revision: str,
                     chosen: rollout.Strategy) -> tuple[dict[str, Any], list[dict[str, Any]], list[str], int]:
    """Delete this step's outdated handles. Returns the pool, the handles left, keys to wake, and the surge:
    how many handles the pool may keep above ``minAvailable`` while outdated ones remain."""
    min_available = int((pool.get("spec") or {}).get("minAvailable") or 0)
    first = rollout.plan(members(ctx, handles), revision, min_available, chosen)
    wake: list[str] = []
    if first.delete:
        def choose(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
            victims = set(rollout.plan(members(ctx, found), revision, min_available, chosen).delete)
            return [h for h in found if h["metadata"]["name"] in victims]

        pool, deleted, wake = pool_members.delete_unbound(ctx, pool, choose, "outdated")
        handles = [h for h in handles if h["metadata"]["name"] not in deleted]
    remaining = len(rollout.outdated(members(ctx, handles), revision))
    return pool, handles, wake, min(chosen.max_surge, remaining) if chosen.replace else 0


def report(ctx: Context, pool: dict[str, Any], status: dict[str, Any], handles: list[dict[str, Any]],
           revision: str, chosen: rollout.Strategy) -> None:
    """Set the revision, the updated/outdated counts and ``UpToDate`` in ``status``; an Event when a rollout
    starts or ends (on the transition only, never on a converged re-run)."""
    outdated = len(rollout.outdated(members(ctx, handles), revision))
    status["revision"] = revision
    status["resourceHandleCount"] = {**(status.get("resourceHandleCount") or {}),
                                     "updated": len(handles) - outdated, "outdated": outdated}
    previous = conditions.get_condition(status.get("conditions"), CONDITION) or {}
    ok, reason, message = rollout.up_to_date(outdated, len(handles), chosen)
    status["conditions"] = conditions.set_condition(status.get("conditions"), CONDITION, ok, reason, message,
                                                    ctx.now, pool["metadata"].get("generation"))
    if reason == "RollingOut" and previous.get("reason") != "RollingOut":
        ctx.events.emit(pool, "RollingOut", message)
    elif ok and previous.get("reason") == "RollingOut":
        ctx.events.emit(pool, "RolloutComplete", message)

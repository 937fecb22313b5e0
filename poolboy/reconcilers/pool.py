"""ResourcePool reconciler (docs/behaviour.md#pools, #scalings for the pool side, #deletion for a deleted pool).

The pool never makes more handles than it needs, whatever failed between its creates. Every step reads the run's
cheap view (the shared cache's index summaries), which lags the API server: a create of an earlier run reaches it
only with the watch, and a create whose answer was lost (stored, then a 500, a 503 or a cut connection) never comes
back to the run that made it. So a run whose cheap view shows a deficit first counts again from the API server
(:attr:`~poolboy.context.Context.api_reader`: one consistent list of the pool's unbound handles, and the active
scaling's handles and status when a scaling is being served), and creates exactly the deficit that count shows; a
run with nothing to create makes no extra request. Every create of an earlier run, answered or not, is in that
count, and the work queue runs one reconcile per pool at a time, so the pool never goes above ``minAvailable`` (plus a
rollout's surge, autoscaling's extra, a scaling's count). The pool never writes a scaling's status: it wakes the
scaling, whose own reconciler counts the handles labelled with its name.

Steps of a run: delete unhealthy handles (``deleteUnhealthyResourceHandles``), take the next step of a rollout of
outdated handles (``updateStrategy: Replace``, :mod:`poolboy.reconcilers.pool_rollout`), size the pool to demand
(``autoscaling``, :mod:`poolboy.reconcilers.pool_autoscaling`), create the deficit, write the status. Reading and
deleting unbound handles is :mod:`poolboy.reconcilers.pool_members`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import binding, conditions, pool_handles, refusals
from poolboy.domain.binding import scope_policy
from poolboy.domain.handle_state import STANDBY, state_of
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_HANDLE, RESOURCE_POOL, RESOURCE_POOL_SCALING
from poolboy.reconcilers import (
    pool_autoscaling,
    pool_creates,
    pool_members,
    pool_queue,
    pool_rollout,
    pool_standby,
    preamble,
)
from poolboy.result import PermanentError, Result
from poolboy.utils import timeutil

log = logging.getLogger(__name__)



def pool_scalings(ctx: Context, pool_name: str, reader: kube.Reader | None = None) -> list[dict[str, Any]]:
    """The pool's scalings, oldest ``creationTimestamp`` first, then name (docs/behaviour.md#scalings: "first"),
    from ``reader`` (:attr:`Context.kube` unless given)."""
    scalings = (reader or ctx.kube).list(ctx.settings.api_version, RESOURCE_POOL_SCALING,
                                         ctx.settings.operator_namespace)
    mine = [s for s in scalings if ((s.get("spec") or {}).get("resourcePool") or {}).get("name") == pool_name
            and not s["metadata"].get("deletionTimestamp")]
    return sorted(mine, key=lambda s: (s["metadata"].get("creationTimestamp") or "", s["metadata"]["name"]))


def scaling_at(scaling: dict[str, Any], now: datetime) -> datetime:
    at = (scaling.get("spec") or {}).get("at")
    return timeutil.parse_timestamp(at) if at else now


def scaling_handle_names(ctx: Context, scaling_name: str, reader: kube.Reader | None = None) -> list[str]:
    handles = (reader or ctx.kube).list(ctx.settings.api_version, RESOURCE_HANDLE, ctx.settings.operator_namespace,
                                        label_selector=f"{ctx.label('resource-pool-scaling-name')}={scaling_name}")
    return [h["metadata"]["name"] for h in handles]


def _delete_unhealthy(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]]) -> tuple[
        dict[str, Any], list[dict[str, Any]], list[str]]:
    """Delete unbound ``healthy == false`` handles (scaling ones recorded first, so their scaling replaces them)."""
    if not any((h.get("status") or {}).get("healthy") is False for h in handles):
        return pool, handles, []
    pool, deleted, wake = pool_members.delete_unbound(
        ctx, pool, lambda found: [h for h in found if (h.get("status") or {}).get("healthy") is False], "unhealthy")
    return pool, [h for h in handles if h["metadata"]["name"] not in deleted], wake


def _active_scaling(ctx: Context, pool: dict[str, Any], scalings: list[dict[str, Any]],
                    reader: kube.Reader | None = None) -> tuple[dict[str, Any] | None, int, datetime | None]:
    """The first active scaling and how many handles it still needs (its handles read from ``reader``); plus the
    next future ``at``."""
    next_at: datetime | None = None
    for scaling in scalings:
        try:
            at = scaling_at(scaling, ctx.now)
        except ValueError:
            continue
        if at > ctx.now:
            next_at = at if next_at is None else min(next_at, at)
            continue
        names = scaling_handle_names(ctx, scaling["metadata"]["name"], reader)
        created = pool_handles.scaling_created(scaling, names, pool)
        remaining = int((scaling.get("spec") or {}).get("count") or 0) - len(created)
        if remaining > 0:
            return scaling, remaining, next_at
    return None, 0, next_at


@dataclass(frozen=True)
class _Demand:
    """What the pool is to create from: its unbound handles, and the active scaling with how many handles it still
    needs, as one reader (the run's cheap view, or the API server) sees them."""

    handles: list[dict[str, Any]]
    scaling: dict[str, Any] | None
    scaling_remaining: int
    #: released handles being cleaned for reuse, coming back unbound; None for a pool whose provider does not reuse
    cleaning: int | None = None


def _plan(pool: dict[str, Any], demand: _Demand, surge: int) -> tuple[int, int]:
    """How many handles to create for the pool (up to ``minAvailable`` plus ``surge``) and then for the active
    scaling, together no more than ``maxUnready`` leaves room for."""
    spec = pool.get("spec") or {}
    deficit = max(0, int(spec.get("minAvailable") or 0) + surge - len(demand.handles) - (demand.cleaning or 0))
    wanted = deficit + (demand.scaling_remaining if demand.scaling else 0)
    max_unready = spec.get("maxUnready")
    if max_unready is not None:
        unready = sum(1 for h in demand.handles if (h.get("status") or {}).get("ready") is not True
                      and state_of(h) != STANDBY)  # a handle on standby is provisioned, only stopped
        wanted = min(wanted, max(0, int(max_unready) - unready))
    return min(deficit, wanted), wanted - min(deficit, wanted)


def _counted(ctx: Context, pool: dict[str, Any], cached: _Demand) -> _Demand:
    """The demand as the API server counts it (see the module docstring): the pool's unbound handles, and the
    scalings again when the cheap view has an active one (a view that lags misses handles and records, so it counts
    more missing, never fewer: a scaling it counts as done is done)."""
    api, name = ctx.api_reader, pool["metadata"]["name"]
    handles = pool_members.unbound_handles(ctx, name, reader=api)
    cleaning = None if cached.cleaning is None else pool_members.cleaning_count(ctx, name, reader=api)
    if cached.scaling is None:
        return _Demand(handles, None, 0, cleaning)
    scaling, remaining, _ = _active_scaling(ctx, pool, pool_scalings(ctx, name, reader=api), reader=api)
    return _Demand(handles, scaling, remaining, cleaning)


def _create_handles(ctx: Context, pool: dict[str, Any], providers: list[Provider], cached: _Demand,
                    surge: int) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Create up to ``minAvailable`` (plus a rollout's ``surge``), then what the active scaling still needs, as
    counted by the API server when the cheap view shows anything to create or a run named creates
    (:mod:`.pool_creates`): those not listed yet count as coming, and are made before any other. Returns the pool as
    last written, the unbound handles as last counted and the handles created."""
    named = pool_creates.pending(pool)
    if not named and not any(_plan(pool, cached, surge)):
        return pool, cached.handles, []
    demand = _counted(ctx, pool, cached)
    coming = pool_creates.coming(named, demand.handles)
    scaling_name = demand.scaling["metadata"]["name"] if demand.scaling else None
    counted = _Demand(demand.handles + [pool_creates.placeholder(p) for p in coming if not p.scaling],
                      demand.scaling,
                      demand.scaling_remaining - sum(1 for p in coming if scaling_name and p.scaling == scaling_name),
                      demand.cleaning)
    for_pool, for_scaling = _plan(pool, counted, surge)
    new = pool_creates.fresh(for_pool) + pool_creates.fresh(for_scaling, scaling_name)
    if new:
        pool = pool_creates.name(ctx, pool, coming + new)
    return pool, demand.handles, pool_creates.create(ctx, pool, providers, coming + new)


def _status(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]],
            cleaning: int | None = None) -> dict[str, Any]:
    status = dict(pool.get("status") or {})
    entries = []
    for handle in handles:
        entry: dict[str, Any] = {"name": handle["metadata"]["name"]}
        for key in ("healthy", "ready"):
            value = (handle.get("status") or {}).get(key)
            if value is not None:
                entry[key] = value
        entries.append(entry)
    ready = sum(1 for e in entries if e.get("ready") is True)
    status["resourceHandles"] = entries
    status["resourceHandleCount"] = {"available": len(entries), "ready": ready}
    if cleaning is not None:  # only a pool whose provider reuses handles shows it
        status["resourceHandleCount"]["cleaning"] = cleaning
    status["replicas"] = len(entries)  # the scale subresource's view: kubectl scale, autoscalers
    status["selector"] = binding.scale_selector(ctx, pool["metadata"]["name"])
    measured = pool_members.measured_time_to_ready(handles, status.get("timeToReadySeconds"))
    if measured is not None:
        status["timeToReadySeconds"] = measured
    min_available = int((pool.get("spec") or {}).get("minAvailable") or 0)
    met = len(entries) >= min_available
    status["conditions"] = conditions.set_condition(
        status.get("conditions"), "Ready", met, "MinAvailable" if met else "Replenishing",
        f"{len(entries)} of {min_available} required handles available.", ctx.now,
        pool["metadata"].get("generation"))
    return status


def _cleaning(ctx: Context, name: str, providers: list[Provider]) -> int | None:
    """The pool's handles being cleaned for reuse, counted only when its provider reuses handles (no request for
    any other pool)."""
    if not any(p.spec.get("reuse") is not None for p in providers[:1]):
        return None
    return pool_members.cleaning_count(ctx, name)


def _cleanup(ctx: Context, pool: dict[str, Any]) -> preamble.Cleaned:
    """Pool deleted: delete every unbound handle; bound handles keep working. The preamble then removes the
    finalizer."""
    handles = pool_members.unbound_handles(ctx, pool["metadata"]["name"])
    for handle in handles:
        metadata = handle["metadata"]
        ctx.kube.delete_if_exists(handle["apiVersion"], RESOURCE_HANDLE, metadata["name"], metadata["namespace"],
                                  uid=metadata.get("uid"))
    return preamble.Cleaned(Result(wake=tuple(keys.make(keys.HANDLE, h["metadata"]["namespace"],
                                                           h["metadata"]["name"]) for h in handles)))


def _fail(ctx: Context, pool: dict[str, Any], error: PermanentError) -> None:
    """``Synced=False`` with the error, and a Warning Event when the message is new."""
    status = dict(pool.get("status") or {})
    previous = conditions.get_condition(status.get("conditions"), "Synced") or {}
    status["conditions"] = conditions.set_condition(status.get("conditions"), "Synced", False, error.reason,
                                                    error.message, ctx.now, pool["metadata"].get("generation"))
    pool = pool_members.write_status(ctx, pool, status)
    if previous.get("message") != error.message:
        ctx.events.emit(pool, error.reason, error.message, type="Warning")


def _invalid_queue(pool: dict[str, Any]) -> str | None:
    """What is wrong with the pool's ``spec.queue``: its waiting claims are served oldest first until it is fixed
    (the pool itself goes on filling)."""
    try:
        scope_policy.checked(pool, RESOURCE_POOL)
    except ValueError as error:
        return f"{error}; waiting claims are served oldest first until it is fixed."
    return None


def _live(ctx: Context, pool: dict[str, Any]) -> Result:
    name = pool["metadata"]["name"]
    handles = pool_members.available_handles(ctx, name)
    wake: list[str] = []
    if (pool.get("spec") or {}).get("deleteUnhealthyResourceHandles"):
        pool, handles, deleted_keys = _delete_unhealthy(ctx, pool, handles)
        wake += deleted_keys
    scalings = pool_scalings(ctx, name)
    scaling, remaining, next_at = _active_scaling(ctx, pool, scalings)
    try:
        with refusals.as_permanent():
            providers = pool_handles.pool_providers(ctx, pool)  # a missing or broken provider shows without a deficit
            cleaning = _cleaning(ctx, name, providers)
            chosen = pool_rollout.strategy(pool)
            revision = pool_handles.revision(pool, providers)
            pool, handles, replaced_keys, surge = pool_rollout.replace_outdated(ctx, pool, handles, revision, chosen)
            wake += replaced_keys
            sized = pool_autoscaling.plan(ctx, pool, handles)
            if not surge:  # never shrink during a rollout: its surge handles are not surplus
                pool, handles, surplus_keys = pool_autoscaling.scale_down(ctx, pool, handles, sized)
                wake += surplus_keys
            pool, handles, created = _create_handles(ctx, pool, providers,
                                                     _Demand(handles, scaling, remaining, cleaning),
                                                     surge + pool_autoscaling.extra(sized, pool))
    except PermanentError as error:
        _fail(ctx, pool, error)
        raise
    if created:
        ctx.events.emit(pool, "HandlesCreated", f"Created {len(created)} ResourceHandle(s).")
    standby, invalid_standby = pool_standby.checked(pool, providers)
    placed = pool_standby.place(ctx, pool, handles, standby)
    pool, handles, wake = placed.pool, placed.handles, wake + placed.wake
    status = pool_creates.cleared(_status(ctx, pool, handles + created, cleaning))
    pool_standby.report(pool, status, handles + created)
    pool_rollout.report(ctx, pool, status, handles + created, revision, chosen)
    scale_down_at = pool_autoscaling.report(ctx, pool, status, sized)
    pool_queue.report(ctx, pool, status)
    previous = conditions.get_condition((pool.get("status") or {}).get("conditions"), "Synced") or {}
    invalid = _invalid_queue(pool)
    synced, reason, message = (False, "InvalidQueue", invalid) if invalid else (True, "Synced", "Pool is in sync.")
    if invalid_standby:
        synced, reason, message = False, "InvalidStandby", invalid_standby
    status["conditions"] = conditions.set_condition(status["conditions"], "Synced", synced, reason, message,
                                                    ctx.now, pool["metadata"].get("generation"))
    pool = pool_members.write_status(ctx, pool, status)
    if not synced and previous.get("message") != message:
        ctx.events.emit(pool, reason, message, type="Warning")
    # created handles are not woken: the watcher's ADDED event of each wakes it (this run's writes count as own
    # writes of the pool's key only); woken here too, a handle whose first run ended before this run did would
    # run again to find nothing to do
    wake += [keys.make(keys.SCALING, s["metadata"]["namespace"], s["metadata"]["name"]) for s in scalings]
    deadlines = [t for t in (next_at, scale_down_at, placed.next_at) if t is not None]
    return Result(requeue_at=min(deadlines) if deadlines else None, wake=tuple(dict.fromkeys(wake)))


#: converge one pool (see the module docstring); conflicts re-run from fresh reads
reconcile = preamble.ObjectReconciler(RESOURCE_POOL, live=_live, deleting=_cleanup)

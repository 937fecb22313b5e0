"""ResourcePool reconciler (spec §3.18, §3.19 pool side, §3.17 pool deleted).

Every decision is made from a fresh list of the pool's unbound handles, and exactly the deficit is created, so a
repeated reconcile never over-provisions (the gate runs one reconcile per pool at a time). The pool never writes a
scaling's status: it enqueues the scaling, whose own reconciler counts the handles labelled with its name.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import candidates, conditions, pool_handles
from poolboy.domain.object_meta import is_ignored, our_finalizers, remove_finalizers
from poolboy.reconcilers import preamble
from poolboy.result import PermanentError, Result
from poolboy.utils import timeutil

log = logging.getLogger(__name__)

KIND = "ResourcePool"


def reconcile(ctx: Context, namespace: str, name: str) -> Result:
    return preamble.reconcile_object(ctx, KIND, namespace, name, live=_live, deleting=_cleanup)


def unbound_selector(ctx: Context, pool_name: str) -> str:
    """The label selector of the pool's unbound handles; also the pool's scale ``status.selector``."""
    return f"{ctx.label('resource-pool-name')}={pool_name},!{ctx.label('resource-claim-name')}"


def unbound_handles(ctx: Context, pool_name: str) -> list[dict[str, Any]]:
    """Handles labelled with the pool, not labelled with a claim, without ``spec.resourceClaim``, not deleting.

    Ignored handles (``D/ignore``) are left out: no claim can bind them, so they are not available and the pool
    replaces them; and the pool neither lists, deletes (unhealthy, pool deleted) nor otherwise touches them (§3.1).
    """
    handles = ctx.kube.list(ctx.settings.api_version, "ResourceHandle", ctx.settings.operator_namespace,
                            label_selector=unbound_selector(ctx, pool_name))
    return sorted((h for h in handles if not (h.get("spec") or {}).get("resourceClaim")
                   and not h["metadata"].get("deletionTimestamp") and not is_ignored(ctx, h)),
                  key=lambda h: h["metadata"]["name"])


def available_handles(ctx: Context, pool_name: str) -> list[dict[str, Any]]:
    """The pool's unbound handles as far as counting and status need them (name, ``status.healthy``/``ready``).

    From the engine's index of unbound handles when it can answer: one read of small summaries instead of every
    handle's document, so a pool run costs the same whatever the pool's size. Otherwise :func:`unbound_handles`.
    The index applies the same rule (:func:`poolboy.domain.candidates.is_unbound`: no claim, not deleting, not
    ignored); an entry is ``{"metadata": {"name"}, "status": {"healthy", "ready"}}``.
    """
    summaries = ctx.index.summaries(candidates.claim_scope(pool_name, "")) if ctx.index is not None else None
    if summaries is None:
        return unbound_handles(ctx, pool_name)
    return [{"metadata": {"name": name},
             "status": {key: value for key, value in (("healthy", entry.get("h")), ("ready", entry.get("r")))
                        if value is not None}}
            for name, entry in sorted(summaries.items())]


def pool_scalings(ctx: Context, pool_name: str) -> list[dict[str, Any]]:
    """The pool's scalings, oldest ``creationTimestamp`` first, then name (spec §3.19 "first")."""
    scalings = ctx.kube.list(ctx.settings.api_version, "ResourcePoolScaling", ctx.settings.operator_namespace)
    mine = [s for s in scalings if ((s.get("spec") or {}).get("resourcePool") or {}).get("name") == pool_name
            and not s["metadata"].get("deletionTimestamp")]
    return sorted(mine, key=lambda s: (s["metadata"].get("creationTimestamp") or "", s["metadata"]["name"]))


def scaling_at(scaling: dict[str, Any], now: datetime) -> datetime:
    at = (scaling.get("spec") or {}).get("at")
    return timeutil.parse_timestamp(at) if at else now


def scaling_handle_names(ctx: Context, scaling_name: str) -> list[str]:
    handles = ctx.kube.list(ctx.settings.api_version, "ResourceHandle", ctx.settings.operator_namespace,
                            label_selector=f"{ctx.label('resource-pool-scaling-name')}={scaling_name}")
    return [h["metadata"]["name"] for h in handles]


def _write_status(ctx: Context, pool: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    if status == (pool.get("status") or {}):
        return pool
    body = {**pool, "status": status}
    return ctx.kube.replace_status(body)


def _delete_unhealthy(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]]) -> tuple[
        dict[str, Any], list[dict[str, Any]], list[str]]:
    """Delete unbound ``healthy == false`` handles; record scaling ones in pool status first (decrement)."""
    unhealthy_names = {h["metadata"]["name"] for h in handles if (h.get("status") or {}).get("healthy") is False}
    if not unhealthy_names:
        return pool, handles, []
    # the members may be summaries: read the unhealthy ones whole (uid, labels), as they are now
    unhealthy = [h for h in unbound_handles(ctx, pool["metadata"]["name"])
                 if h["metadata"]["name"] in unhealthy_names and (h.get("status") or {}).get("healthy") is False]
    status = dict(pool.get("status") or {})
    record = {k: list(v) for k, v in (status.get(pool_handles.UNHEALTHY_DELETED_KEY) or {}).items()}
    scaling_label = ctx.label("resource-pool-scaling-name")
    touched: list[str] = []
    for handle in unhealthy:
        scaling = (handle["metadata"].get("labels") or {}).get(scaling_label)
        if scaling and handle["metadata"]["name"] not in record.get(scaling, []):
            record.setdefault(scaling, []).append(handle["metadata"]["name"])
            touched.append(scaling)
    if touched:
        status[pool_handles.UNHEALTHY_DELETED_KEY] = record
        pool = _write_status(ctx, pool, status)
    for handle in unhealthy:
        metadata = handle["metadata"]
        log.info("pool %s: deleting unhealthy handle %s", pool["metadata"]["name"], metadata["name"])
        ctx.kube.delete_if_exists(handle["apiVersion"], "ResourceHandle", metadata["name"], metadata["namespace"],
                                  uid=metadata.get("uid"))
    deleted = {h["metadata"]["name"] for h in unhealthy}
    return pool, [h for h in handles if h["metadata"]["name"] not in deleted], [
        keys.make(keys.HANDLE, h["metadata"]["namespace"], h["metadata"]["name"]) for h in unhealthy] + [
        keys.make(keys.SCALING, ctx.settings.operator_namespace, s) for s in touched]


def _active_scaling(ctx: Context, pool: dict[str, Any], scalings: list[dict[str, Any]]) -> tuple[
        dict[str, Any] | None, int, datetime | None]:
    """The first active scaling and how many handles it still needs; plus the next future ``at``."""
    next_at: datetime | None = None
    for scaling in scalings:
        try:
            at = scaling_at(scaling, ctx.now)
        except ValueError:
            continue
        if at > ctx.now:
            next_at = at if next_at is None else min(next_at, at)
            continue
        created = pool_handles.scaling_created(scaling, scaling_handle_names(ctx, scaling["metadata"]["name"]), pool)
        remaining = int((scaling.get("spec") or {}).get("count") or 0) - len(created)
        if remaining > 0:
            return scaling, remaining, next_at
    return None, 0, next_at


def _create_handles(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]],
                    scaling: dict[str, Any] | None, scaling_remaining: int) -> list[dict[str, Any]]:
    spec = pool.get("spec") or {}
    min_available = int(spec.get("minAvailable") or 0)
    max_unready = spec.get("maxUnready")
    available = len(handles)
    unready = sum(1 for h in handles if (h.get("status") or {}).get("ready") is not True)
    created: list[dict[str, Any]] = []
    providers = pool_handles.pool_providers(ctx, pool)  # a missing or broken provider shows even without a deficit
    while (max_unready is None or unready < int(max_unready)) and \
            (available < min_available or scaling_remaining > 0):
        for_scaling = available >= min_available
        body = pool_handles.build_pool_handle(
            ctx, pool, providers, scaling_name=scaling["metadata"]["name"] if for_scaling and scaling else None)
        try:
            created.append(ctx.kube.create(body))
        except kube.AlreadyExists:
            continue  # name collision: try another random name
        available += 1
        unready += 1
        if for_scaling:
            scaling_remaining -= 1
    return created


def _status(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]]) -> dict[str, Any]:
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
    status["replicas"] = len(entries)  # the scale subresource's view: kubectl scale, autoscalers
    status["selector"] = unbound_selector(ctx, pool["metadata"]["name"])
    min_available = int((pool.get("spec") or {}).get("minAvailable") or 0)
    met = len(entries) >= min_available
    status["conditions"] = conditions.set_condition(
        status.get("conditions"), "Ready", met, "MinAvailable" if met else "Replenishing",
        f"{len(entries)} of {min_available} required handles available.", ctx.now,
        pool["metadata"].get("generation"))
    return status


def _cleanup(ctx: Context, pool: dict[str, Any]) -> Result:
    """Spec §3.17: delete every unbound handle; bound handles keep working; then remove the finalizer."""
    if not our_finalizers(ctx, pool):
        return Result()
    handles = unbound_handles(ctx, pool["metadata"]["name"])
    for handle in handles:
        metadata = handle["metadata"]
        ctx.kube.delete_if_exists(handle["apiVersion"], "ResourceHandle", metadata["name"], metadata["namespace"],
                                  uid=metadata.get("uid"))
    remove_finalizers(ctx, pool)
    return Result(enqueue=tuple(keys.make(keys.HANDLE, h["metadata"]["namespace"], h["metadata"]["name"])
                                for h in handles))


def _live(ctx: Context, pool: dict[str, Any]) -> Result:
    name = pool["metadata"]["name"]
    handles = available_handles(ctx, name)
    enqueue: list[str] = []
    if (pool.get("spec") or {}).get("deleteUnhealthyResourceHandles"):
        pool, handles, deleted_keys = _delete_unhealthy(ctx, pool, handles)
        enqueue += deleted_keys
    scalings = pool_scalings(ctx, name)
    scaling, remaining, next_at = _active_scaling(ctx, pool, scalings)
    try:
        created = _create_handles(ctx, pool, handles, scaling, remaining)
    except PermanentError as error:
        status = dict(pool.get("status") or {})
        previous = conditions.get_condition(status.get("conditions"), "Synced") or {}
        status["conditions"] = conditions.set_condition(status.get("conditions"), "Synced", False, error.reason,
                                                        error.message, ctx.now, pool["metadata"].get("generation"))
        pool = _write_status(ctx, pool, status)
        if previous.get("message") != error.message:
            ctx.kube.emit_event(pool, error.reason, error.message, type="Warning")
        raise
    if created:
        ctx.kube.emit_event(pool, "HandlesCreated", f"Created {len(created)} ResourceHandle(s).")
    status = _status(ctx, pool, handles + created)
    if conditions.get_condition(status.get("conditions"), "Synced"):
        status["conditions"] = conditions.set_condition(status["conditions"], "Synced", True, "Synced",
                                                        "Pool is in sync.", ctx.now,
                                                        pool["metadata"].get("generation"))
    _write_status(ctx, pool, status)
    enqueue += [keys.make(keys.HANDLE, h["metadata"]["namespace"], h["metadata"]["name"]) for h in created]
    enqueue += [keys.make(keys.SCALING, s["metadata"]["namespace"], s["metadata"]["name"]) for s in scalings]
    return Result(requeue_at=next_at, enqueue=tuple(dict.fromkeys(enqueue)))

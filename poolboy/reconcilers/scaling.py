"""ResourcePoolScaling reconciler (docs/behaviour.md#scalings): ownerReference to its pool, exact ``status.count``,
``state``.

The scaling is the only writer of its status. ``status.count`` is the size of the set of handles it owns (see
:mod:`poolboy.domain.pool_handles`), kept in ``status.handles`` so that handles claimed and deleted later still count.
"""

from __future__ import annotations

from typing import Any

from poolboy import keys
from poolboy.context import Context
from poolboy.domain import conditions, pool_handles
from poolboy.kinds import RESOURCE_POOL, RESOURCE_POOL_SCALING
from poolboy.reconcilers import preamble
from poolboy.reconcilers.pool import scaling_at, scaling_handle_names
from poolboy.result import PermanentError, Result


def _write_status(ctx: Context, scaling: dict[str, Any], status: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    if status == (scaling.get("status") or {}):
        return scaling, False
    return ctx.kube.replace_status({**scaling, "status": status}), True


def _ensure_owner(ctx: Context, scaling: dict[str, Any], pool: dict[str, Any]) -> dict[str, Any]:
    owners = scaling["metadata"].get("ownerReferences") or []
    uid = pool["metadata"]["uid"]
    if any(o.get("uid") == uid and o.get("controller") for o in owners):
        return scaling
    owner = {"apiVersion": pool["apiVersion"], "kind": RESOURCE_POOL, "name": pool["metadata"]["name"],
             "uid": uid, "controller": True, "blockOwnerDeletion": True}
    others = [o for o in owners if not o.get("controller")]
    return ctx.kube.patch_merge(scaling["apiVersion"], RESOURCE_POOL_SCALING, scaling["metadata"]["name"],
                                scaling["metadata"]["namespace"], {"metadata": {"ownerReferences": [*others, owner]}},
                                resource_version=scaling["metadata"]["resourceVersion"])


def _pool_missing(ctx: Context, scaling: dict[str, Any], pool_name: str) -> PermanentError:
    message = f"ResourcePool {pool_name} not found"
    status = dict(scaling.get("status") or {})
    previous = conditions.get_condition(status.get("conditions"), "Ready") or {}
    status["conditions"] = conditions.set_condition(status.get("conditions"), "Ready", False, "PoolNotFound",
                                                    message, ctx.now, scaling["metadata"].get("generation"))
    scaling, _ = _write_status(ctx, scaling, status)
    if previous.get("message") != message:
        ctx.events.emit(scaling, "PoolNotFound", message, type="Warning")
    return PermanentError("PoolNotFound", message)


def _live(ctx: Context, scaling: dict[str, Any]) -> Result:
    name = scaling["metadata"]["name"]
    spec = scaling.get("spec") or {}
    pool_name = (spec.get("resourcePool") or {}).get("name") or ""
    pool = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_POOL, pool_name, ctx.settings.operator_namespace)
    if pool is None:
        raise _pool_missing(ctx, scaling, pool_name)
    scaling = _ensure_owner(ctx, scaling, pool)
    created = pool_handles.scaling_created(scaling, scaling_handle_names(ctx, name), pool)
    count = len(created)
    at = scaling_at(scaling, ctx.now)
    wanted = int(spec.get("count") or 0)
    state = "waiting" if at > ctx.now else ("scaling" if count < wanted else "done")
    status = dict(scaling.get("status") or {})
    status.update({"count": count, "state": state, "handles": sorted(created)})
    status["conditions"] = conditions.set_condition(
        status.get("conditions"), "Ready", state == "done", {"waiting": "Waiting", "scaling": "Scaling",
                                                            "done": "Done"}[state],
        f"{count} of {wanted} handles created.", ctx.now, scaling["metadata"].get("generation"))
    scaling, changed = _write_status(ctx, scaling, status)
    pool_key = keys.make(keys.POOL, pool["metadata"]["namespace"], pool_name)
    return Result(requeue_at=at if at > ctx.now else None, wake=(pool_key,) if changed else ())


#: converge one scaling; no finalizer: a scaling is garbage-collected with its pool (owner reference), nothing to
#: clean up
reconcile = preamble.ObjectReconciler(RESOURCE_POOL_SCALING, live=_live, finalizer=preamble.Finalizer.NONE)

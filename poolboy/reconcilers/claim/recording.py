"""What a claim records of the handle it bound, adopted or created: ``status.resourceHandle``, a fresh
``status.lifespan`` from the bind time, the handle and (for a pool's handle) its pool woken, and the Events."""

from __future__ import annotations

from typing import Any

from poolboy import keys
from poolboy.domain import claim_lifespan
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode


def bound(run: ClaimRun, mode: Mode, handle: dict[str, Any], reason: str, message: str) -> None:
    """Record a handle bound in this run; its pool replenishes."""
    pool = (handle["metadata"].get("labels") or {}).get(run.ctx.label("resource-pool-name"))
    if pool:
        run.hold.append(keys.make(keys.POOL, run.ctx.settings.operator_namespace, pool))
    record_binding(run, mode, handle, reason, message)


def record_binding(run: ClaimRun, mode: Mode, handle: dict[str, Any], reason: str, message: str) -> None:
    """``status.resourceHandle`` and a fresh ``status.lifespan`` whose start is the bind time."""
    run.status["resourceHandle"] = {"apiVersion": run.ctx.settings.api_version, "kind": RESOURCE_HANDLE,
                                    "name": handle["metadata"]["name"], "namespace": handle["metadata"]["namespace"]}
    limits = claim_lifespan.handle_limits(handle, run.claim, mode.template_vars(handle))
    run.status["lifespan"] = claim_lifespan.status_lifespan({}, handle, limits, start=run.ctx.now)
    run.status.pop("queue", None)
    run.wake.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))
    run.event(reason, message)
    run.handle_events.append((handle, "Bound", f"Bound to ResourceClaim {run.meta['namespace']}/{run.meta['name']}"))
    run.bound_now = True

"""ResourceProvider reconciler: a provider change takes effect at once by enqueueing its dependants (spec §3.1).

Poolboy never writes a provider's status; this reconciler only fans out. Dependants are found from fresh lists:
claims that use the provider (or are still unbound, since they may now match or find it), handles and pools
whose spec names it.
"""

from __future__ import annotations

from typing import Any

from poolboy import keys
from poolboy.context import Context
from poolboy.result import Result


def _names(spec_or_status: dict[str, Any] | None) -> set[str]:
    """Provider names referenced by a ``provider`` entry or ``resources[].provider`` of a spec or status."""
    body = spec_or_status or {}
    names = {(body.get("provider") or {}).get("name")}
    names |= {((r or {}).get("provider") or {}).get("name") for r in body.get("resources") or []}
    return {n for n in names if n}


def claim_depends(claim: dict[str, Any], name: str) -> bool:
    status = claim.get("status") or {}
    return name in _names(status) or name in _names(claim.get("spec")) or not status.get("resourceHandle")


def reconcile(ctx: Context, namespace: str, name: str) -> Result:
    api = ctx.settings.api_version
    enqueue: list[str] = []
    for claim in ctx.kube.list(api, "ResourceClaim"):
        if claim_depends(claim, name):
            enqueue.append(keys.make(keys.CLAIM, claim["metadata"]["namespace"], claim["metadata"]["name"]))
    for kind, token in (("ResourceHandle", keys.HANDLE), ("ResourcePool", keys.POOL)):
        for obj in ctx.kube.list(api, kind, ctx.settings.operator_namespace):
            if name in _names(obj.get("spec")):
                enqueue.append(keys.make(token, obj["metadata"]["namespace"], obj["metadata"]["name"]))
    return Result(enqueue=tuple(enqueue))

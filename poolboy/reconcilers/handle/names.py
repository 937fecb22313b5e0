"""How a handle run names what it touches: the keys of its claim and its pool (what a run wakes), and a managed
resource as Event messages name it."""

from __future__ import annotations

from typing import Any

from poolboy import keys
from poolboy.context import Context


def claim_key(handle: dict[str, Any]) -> str | None:
    claim = (handle.get("spec") or {}).get("resourceClaim")
    return keys.make(keys.CLAIM, claim["namespace"], claim["name"]) if claim else None


def pool_key(ctx: Context, handle: dict[str, Any]) -> str | None:
    pool = (handle.get("spec") or {}).get("resourcePool")
    if pool and pool.get("name"):
        return keys.make(keys.POOL, pool.get("namespace") or ctx.settings.operator_namespace, pool["name"])
    name = (handle["metadata"].get("labels") or {}).get(ctx.label("resource-pool-name"))
    return keys.make(keys.POOL, ctx.settings.operator_namespace, name) if name else None


def unique_keys(*candidates: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(k for k in candidates if k))


def describe_reference(ref: dict[str, Any]) -> str:
    """``Kind namespace/name`` (or ``Kind name`` when cluster-scoped), as Event messages name a resource."""
    where = f"{ref['namespace']}/{ref['name']}" if ref.get("namespace") else ref.get("name")
    return f"{ref.get('kind')} {where}"


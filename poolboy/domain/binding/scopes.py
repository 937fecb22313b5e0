"""Binding scopes: the groups of unbound handles a claim draws from, named as the index files them.

A claim in a pool (its ``D/resource-pool-name`` annotation) draws from that pool's handles; any other claim from
the handles whose first resource its first provider makes, and from the handles that name no provider at all.
A handle serves its provider's scope and, when it belongs to one, its pool's. The names (``pool=<name>``,
``provider=<name>``) are the values of the shared cache's ``unbound|…``, ``waiting|…`` and ``created|…`` entries
(:mod:`poolboy.domain.binding.candidates`), so they are built here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_POOL_SCOPE = "pool="
_PROVIDER_SCOPE = "provider="


def pool_scope(pool: str) -> str:
    """The scope of a pool's handles."""
    return _POOL_SCOPE + pool


def provider_scope(provider: str) -> str:
    """The scope of the handles whose first resource ``provider`` makes ("": handles naming no provider, which
    serve any claim outside a pool)."""
    return _PROVIDER_SCOPE + provider


def scope_pool(scope: str) -> str | None:
    """The pool a scope of :func:`pool_scope` names, None for a provider's."""
    return scope.removeprefix(_POOL_SCOPE) if scope.startswith(_POOL_SCOPE) else None


def claim_scope(pool: str | None, first_provider: str) -> str:
    """The scope a claim draws from: its pool (``D/resource-pool-name`` annotation) or its first provider."""
    return pool_scope(pool) if pool else provider_scope(first_provider)


def handle_scopes(handle: Mapping[str, Any], domain: str) -> list[str]:
    """The scopes a handle serves: its first provider's, and its pool's when it belongs to one."""
    pool = (handle.get("spec") or {}).get("resourcePool", {}) or {}
    labels = (handle.get("metadata") or {}).get("labels") or {}
    pool_name = pool.get("name") or labels.get(f"{domain}/resource-pool-name")
    scopes = [provider_scope(first_provider(handle))]
    if pool_name:
        scopes.append(pool_scope(pool_name))
    return scopes


def first_provider(handle: Mapping[str, Any]) -> str:
    """The provider of a handle's (or a pool's: the same spec shape) first resource, else its `spec.provider`."""
    spec = handle.get("spec") or {}
    resources = spec.get("resources") or []
    name = ((resources[0] or {}).get("provider") or {}).get("name") if resources else None
    return name or ((spec.get("provider") or {}).get("name")) or ""


def claim_first_provider(claim: Mapping[str, Any]) -> str:
    """The provider of a claim's first resource: ``spec.provider``, else the one recorded in status (a template
    matched it), else the one its first resource names."""
    spec = claim.get("spec") or {}
    if (spec.get("provider") or {}).get("name"):
        return str(spec["provider"]["name"])
    for resources in ((claim.get("status") or {}).get("resources"), spec.get("resources")):
        if resources and ((resources[0] or {}).get("provider") or {}).get("name"):
            return str(resources[0]["provider"]["name"])
    return ""

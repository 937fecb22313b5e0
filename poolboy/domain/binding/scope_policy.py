"""Which queue policy governs a binding scope (the pool's ``spec.queue``, else its provider's), and the scope's
waiting claims in the order it serves them.

A policy that does not parse (the CRD's schema catches most mistakes; a pool or provider applied without it may still
hold one) leaves the scope oldest-first and says why in :attr:`ScopePolicy.invalid`: the pool's and provider's own
reconcilers report it on those objects, the claims that wait mention it, and nothing is lost meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from poolboy.domain.binding import queue_order, queue_policy, scopes
from poolboy.domain.binding.queue_order import Standing, Waiter
from poolboy.domain.binding.queue_policy import QueuePolicy
from poolboy.kinds import RESOURCE_POOL, RESOURCE_PROVIDER

if TYPE_CHECKING:
    from poolboy.context import Context


@dataclass(frozen=True)
class ScopePolicy:
    policy: QueuePolicy
    #: why the policy set for the scope was not used, when it was not
    invalid: str | None = None


def checked(obj: dict[str, Any] | None, kind: str) -> QueuePolicy | None:
    """The object's own policy, None when it sets none; ``ValueError`` naming the field when it is wrong."""
    if obj is None or (obj.get("spec") or {}).get("queue") is None:
        return None
    return queue_policy.parse(obj["spec"]["queue"], f"{kind} {obj['metadata']['name']}")


def for_scope(ctx: Context, scope: str) -> ScopePolicy:
    """The policy of the claims that wait in ``scope`` (oldest first when neither pool nor provider sets one)."""
    api_version, namespace = ctx.settings.api_version, ctx.settings.operator_namespace
    pool_name = scopes.scope_pool(scope)
    candidates: list[tuple[dict[str, Any] | None, str]] = []
    provider = scope.partition("=")[2]
    if pool_name is not None:
        pool = ctx.kube.get_or_none(api_version, RESOURCE_POOL, pool_name, namespace)
        candidates.append((pool, RESOURCE_POOL))
        provider = scopes.first_provider(pool) if pool is not None else ""
    if provider:
        candidates.append((ctx.kube.get_or_none(api_version, RESOURCE_PROVIDER, provider, namespace),
                           RESOURCE_PROVIDER))
    for obj, kind in candidates:
        try:
            found = checked(obj, kind)
        except ValueError as error:
            assert obj is not None
            return ScopePolicy(queue_policy.FIFO, f"{kind} {obj['metadata']['name']}: {error}")
        if found is not None:
            return ScopePolicy(found)
    return ScopePolicy(queue_policy.FIFO)


def standings(ctx: Context, scope: str, policy: QueuePolicy,
              joining: Waiter | None = None) -> tuple[list[Standing], int] | None:
    """The scope's waiting claims in the order ``policy`` serves them (``joining``, a claim about to wait that the
    index may not hold yet, included) and how many unbound handles the scope has; None when the index cannot
    answer."""
    state = ctx.index.queue_state(scope) if ctx.index is not None else None
    if state is None:
        return None
    waiters = state.waiters
    if joining is not None and not any((w.namespace, w.name) == (joining.namespace, joining.name) for w in waiters):
        waiters = [*waiters, joining]
    weights = {namespace: queue_policy.weight(_namespace_metadata(ctx, namespace), policy.weight_key)
               for namespace in {w.namespace for w in waiters}} if policy.weight_key else {}
    return queue_order.order(waiters, state.bound, weights, policy, ctx.now.timestamp()), state.free


def _namespace_metadata(ctx: Context, namespace: str) -> dict[str, Any] | None:
    found = ctx.kube.get_or_none("v1", "Namespace", namespace, None)
    return found.get("metadata") if found else None

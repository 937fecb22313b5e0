"""A claim that found no handle and may not create one waits: labelled, with its place in the queue.

The ``D/resource-claim-waiting`` label lets a handle appearing (or becoming unbound) wake exactly the claims that
wait for one. :mod:`poolboy.domain.binding.queue` decides what ``status.queue`` and the ``Bound=False`` message say
and when to rewrite them; this module reads the claim's place from the engine's index (one Redis round trip) and
the pools that serve its scope (from the shared cache).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from poolboy.context import Context
from poolboy.domain import binding
from poolboy.domain.binding import queue as claim_queue
from poolboy.domain.binding import scopes
from poolboy.kinds import RESOURCE_POOL
from poolboy.reconcilers.claim.run import ClaimRun

NO_QUEUE = "No matching unbound ResourceHandle; handle creation is disabled."


def scope_pools(ctx: Context, scope: str) -> list[dict[str, Any]]:
    """The pools that make handles for a binding scope: the pool itself, or the pools of the provider."""
    kind, _, name = scope.partition("=")
    if kind == "pool":
        pool = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_POOL, name, ctx.settings.operator_namespace)
        return [pool] if pool else []
    pools = ctx.kube.list(ctx.settings.api_version, RESOURCE_POOL, ctx.settings.operator_namespace)
    return [p for p in pools if name and name == scopes.first_provider(p)]


def update(ctx: Context, claim: dict[str, Any], status: dict[str, Any], scope: str) -> tuple[str, datetime]:
    """Refresh ``status["queue"]`` within the write bounds; the ``Bound`` message and when to look again."""
    found = ctx.index.queue_position(scope, claim) if ctx.index is not None else None
    if found is not None:
        where = claim_queue.place(scope, *found, scope_pools(ctx, scope))
        interval = timedelta(seconds=ctx.settings.queue_status_interval)
        write, again = claim_queue.refresh(status.get("queue"), where, ctx.now, interval)
        if write:
            status["queue"] = claim_queue.record(where, ctx.now)
    else:
        again = None  # no index (or it cannot answer): keep what was last known
    look_again = ctx.now + timedelta(seconds=min(ctx.settings.queue_status_interval,
                                                 ctx.settings.manage_claims_interval))
    message = claim_queue.message(status["queue"]) if status.get("queue") else NO_QUEUE
    return message, look_again if again is None else min(again, look_again)


def set_waiting(run: ClaimRun, waiting: bool) -> None:
    """Label a claim that waits for an unbound handle, so that a handle appearing enqueues it."""
    label = run.ctx.label(binding.WAITING_LABEL)
    if (label in (run.meta.get("labels") or {})) != waiting:
        run.patch_claim({"metadata": {"labels": {label: "true" if waiting else None}}})


def wait(run: ClaimRun, scope: str) -> None:
    """No handle to bind and creation disabled: label the claim, say where it stands, and look again later."""
    set_waiting(run, True)
    message, again = update(run.ctx, run.claim, run.status, scope)
    run.condition("Bound", False, "NoMatchingHandle", message)
    run.condition("Synced", True, "Synced", "")
    run.requeue.append(again)

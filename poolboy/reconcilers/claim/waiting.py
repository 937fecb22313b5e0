"""A claim that found no handle and may not create one waits: labelled, with its place in the queue.

The ``D/resource-claim-waiting`` label lets a handle appearing (or becoming unbound) wake exactly the claims that
wait for one. The scope's queue policy (:mod:`poolboy.domain.binding.scope_policy`) decides the claim's place —
oldest first by default, read from the engine's index in one round trip; under fair share, caps or priorities the
order of the whole queue — and whether the claim waits at all: over its namespace's cap it waits for one of the
namespace's handles to go (or is refused), past the longest wait it gives up or gets a handle made.
:mod:`poolboy.domain.binding.queue` decides what ``status.queue`` and the ``Bound=False`` message say and when to
rewrite them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from poolboy import keys
from poolboy.context import Context
from poolboy.domain import binding
from poolboy.domain import conditions as cond
from poolboy.domain.binding import candidates, scope_policy, scopes
from poolboy.domain.binding import queue as claim_queue
from poolboy.domain.binding.queue_order import Standing, Waiter, standing_of
from poolboy.domain.binding.queue_policy import PRIORITY_LABEL, OnTimeout, OverCap, QueuePolicy
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_POOL
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.utils import timeutil

NO_QUEUE = "No matching unbound ResourceHandle; handle creation is disabled."
QUEUE_TIMEOUT = "QueueTimeout"
CAP_REFUSED = "NamespaceCapRefused"
CAP_WAIT = "NamespaceCap"


@dataclass(frozen=True)
class Queued:
    """The claim's place in its scope's queue under the scope's policy."""

    scope: str
    policy: QueuePolicy
    #: the claim's standing under a policy other than oldest first (None: the index's own order, or no index)
    standing: Standing | None = None
    #: how many claims of the scope may be served (those over a cap left out)
    waiting: int = 0
    #: why the policy the pool or provider set is not in force
    invalid: str | None = None

    @property
    def position(self) -> int | None:
        """The place the index's reservation checks, under a policy other than oldest first."""
        return self.standing.position if self.standing is not None else None

    @property
    def capped(self) -> bool:
        return self.standing is not None and self.standing.capped


def queued(run: ClaimRun, scope: str) -> Queued:
    """Where the claim stands in ``scope``'s queue (reads the policy, and the queue only when it is not FIFO)."""
    ctx = run.ctx
    found = scope_policy.for_scope(ctx, scope)
    policy = found.policy
    if policy.is_fifo:
        return Queued(scope, policy, invalid=found.invalid)
    label = (run.meta.get("labels") or {}).get(ctx.label(PRIORITY_LABEL))
    me = Waiter(run.meta["namespace"], run.meta["name"], candidates.queue_score(run.claim), label)
    ordered = scope_policy.standings(ctx, scope, policy, joining=me)
    if ordered is None:
        return Queued(scope, policy, invalid=found.invalid)
    standings, _ = ordered
    return Queued(scope, policy, standing_of(standings, me.namespace, me.name),
                  sum(1 for s in standings if not s.capped), found.invalid)


def held_by_cap(where: Queued) -> Queued:
    """``where`` once the reservation found the namespace at its cap (its claims' binds the index shows not yet)."""
    if where.standing is None or where.policy.max_per_namespace is None:
        return where
    standing = dataclasses.replace(where.standing, position=None,
                                   bound=max(where.standing.bound, where.policy.max_per_namespace))
    return dataclasses.replace(where, standing=standing, waiting=max(0, where.waiting - 1))


def timed_out(run: ClaimRun, policy: QueuePolicy) -> bool:
    """The claim has queued (since its creation) longer than the policy's ``maxWait``."""
    if policy.max_wait is None:
        return False
    created = candidates.queue_score(run.claim)
    return bool(created) and run.ctx.now.timestamp() - created >= policy.max_wait.total_seconds()


def wait_deadline(run: ClaimRun, policy: QueuePolicy) -> datetime | None:
    if policy.max_wait is None:
        return None
    return datetime.fromtimestamp(candidates.queue_score(run.claim), tz=run.ctx.now.tzinfo) + policy.max_wait


def scope_pools(ctx: Context, scope: str) -> list[dict[str, Any]]:
    """The pools that make handles for a binding scope: the pool itself, or the pools of the provider."""
    kind, _, name = scope.partition("=")
    if kind == "pool":
        pool = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_POOL, name, ctx.settings.operator_namespace)
        return [pool] if pool else []
    pools = ctx.kube.list(ctx.settings.api_version, RESOURCE_POOL, ctx.settings.operator_namespace)
    return [p for p in pools if name and name == scopes.first_provider(p)]


def _place(ctx: Context, claim: dict[str, Any], where: Queued) -> claim_queue.Place | None:
    """The claim's place to show: from its standing under a policy, else from the index's oldest-first queue."""
    standing = where.standing
    if standing is not None:
        why = claim_queue.Why(where.policy.order.value, standing.waiter.namespace, standing.bound, standing.level,
                              where.policy.max_per_namespace if standing.capped else None,
                              standing.ahead_in_namespace)
        return claim_queue.place(where.scope, standing.position, where.waiting, scope_pools(ctx, where.scope), why)
    found = ctx.index.queue_position(where.scope, claim) if ctx.index is not None else None
    return claim_queue.place(where.scope, *found, scope_pools(ctx, where.scope)) if found is not None else None


def update(ctx: Context, claim: dict[str, Any], status: dict[str, Any], where: Queued) -> tuple[str, datetime]:
    """Refresh ``status["queue"]`` within the write bounds; the ``Bound`` message and when to look again."""
    place = _place(ctx, claim, where)
    again = None
    if place is not None:
        interval = timedelta(seconds=ctx.settings.queue_status_interval)
        write, again = claim_queue.refresh(status.get("queue"), place, ctx.now, interval)
        if write:
            status["queue"] = claim_queue.record(place, ctx.now)
    # else: no index (or it cannot answer): keep what was last known
    look_again = ctx.now + timedelta(seconds=min(ctx.settings.queue_status_interval,
                                                 ctx.settings.manage_claims_interval))
    message = claim_queue.message(status["queue"]) if status.get("queue") else NO_QUEUE
    if where.invalid:
        message += f" The queue policy is not used ({where.invalid}): oldest first."
    return message, look_again if again is None else min(again, look_again)


def namespace_waiters(ctx: Context, namespace: str) -> list[str]:
    """Keys of the claims of ``namespace`` that wait for a handle."""
    claims = ctx.kube.list(ctx.settings.api_version, RESOURCE_CLAIM, namespace,
                           label_selector=ctx.label(binding.WAITING_LABEL))
    return [keys.make(keys.CLAIM, namespace, c["metadata"]["name"]) for c in claims]


def set_waiting(run: ClaimRun, waiting: bool) -> bool:
    """Label a claim that waits for an unbound handle, so that a handle appearing wakes it; whether that changed."""
    label = run.ctx.label(binding.WAITING_LABEL)
    if (label in (run.meta.get("labels") or {})) == waiting:
        return False
    run.patch_claim({"metadata": {"labels": {label: "true" if waiting else None}}})
    return True


def wait(run: ClaimRun, where: Queued) -> None:
    """No handle to bind and creation disabled: label the claim, say where it stands, and look again later."""
    pool = scopes.scope_pool(where.scope)
    if set_waiting(run, True) and pool:  # the pool's status counts its queue
        run.hold.append(keys.make(keys.POOL, run.ctx.settings.operator_namespace, pool))
    message, again = update(run.ctx, run.claim, run.status, where)
    run.condition("Bound", False, CAP_WAIT if where.capped else "NoMatchingHandle", message)
    run.condition("Synced", True, "Synced", "")
    run.requeue.append(again)
    deadline = wait_deadline(run, where.policy)
    if deadline is not None:
        run.requeue.append(deadline)


def refused(run: ClaimRun) -> bool:
    """The claim was refused over its namespace's cap: it stays refused (a refusal is an answer, not a delay)."""
    bound = cond.get_condition(run.status.get("conditions"), "Bound") or {}
    return bound.get("reason") == CAP_REFUSED and not run.status.get("resourceHandle")


def refuses(run: ClaimRun, where: Queued) -> bool:
    """The policy refuses claims over the cap, and this one is over it when it first queues."""
    return where.capped and where.policy.over_cap is OverCap.REFUSE and not run.status.get("queue")


def end_waiting(run: ClaimRun, reason: str, message: str) -> None:
    """The claim stops waiting (refused, or past the longest wait): ``Bound=False`` with ``reason``, out of the
    queue, and a Warning Event when that first happens."""
    previous = cond.get_condition(run.stored_conditions(), "Bound") or {}
    set_waiting(run, False)
    run.status.pop("queue", None)
    run.condition("Bound", False, reason, message)
    run.condition("Synced", True, "Synced", "")
    if previous.get("reason") != reason:
        run.event(reason, message, "Warning")


def refuse(run: ClaimRun, where: Queued) -> None:
    standing = where.standing
    holds = standing.bound if standing is not None else 0
    end_waiting(run, CAP_REFUSED,
                f"Refused: namespace {run.meta['namespace']} holds {holds} of at most "
                f"{where.policy.max_per_namespace} claims of {where.policy.source} at once (maxPerNamespace, "
                f"overCap: Refuse); delete this claim and ask again when one of them is gone.")


def time_out(run: ClaimRun, where: Queued) -> None:
    assert where.policy.max_wait is not None
    fallback = " (onTimeout: CreateHandle, but handle creation is disabled)" \
        if where.policy.on_timeout is OnTimeout.CREATE_HANDLE else ""
    longest = timeutil.format_interval(where.policy.max_wait)
    end_waiting(run, QUEUE_TIMEOUT,
                f"No ResourceHandle of {claim_queue.waiting_for(where.scope)} within the longest wait of "
                f"{where.policy.source} (maxWait {longest}){fallback}; the claim no longer waits.")

"""ResourceHandle reconciler (docs/behaviour.md#handles, #health, #deletion): creates and updates the managed resources
of a handle and computes its health, readiness and summary.

Order (docs/behaviour.md#handles): expiry → provider-mode regeneration of ``spec.resources`` → ``status.resources``
shape → per resource (claim requirement, linked waits, render, record reference, create/update) → status → wake the
claim. A reference is made durable in status BEFORE the resource is created (with an rv precondition), so that a
deletion that starts meanwhile either fails our write (and we re-read and clean up) or sees the reference: a
resource is never created without its handle knowing it.

The parts: :mod:`.names` (kind, woken keys, how Events name a resource), :mod:`.lifecycle` (cleanup, expiry,
deleting the handle), :mod:`.regeneration` (provider mode), :mod:`.run` (managing the resources, health, summary),
:mod:`.status` (shape, conditions and the write of the status), :mod:`.reuse` (a released pool handle cleaned
and returned to its pool).
"""

from __future__ import annotations

from typing import Any

from poolboy.context import Context
from poolboy.domain import binding, conditions, reads, refusals
from poolboy.domain.object_meta import is_ignored
from poolboy.domain.provider import clock_rerun
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE
from poolboy.reconcilers import preamble
from poolboy.reconcilers.handle import reuse, standby
from poolboy.reconcilers.handle.handle_run import HandleRun, Providers, resource_version
from poolboy.reconcilers.handle.lifecycle import cleanup, expiry, requeue_at
from poolboy.reconcilers.handle.names import claim_key, pool_key, unique_keys
from poolboy.reconcilers.handle.regeneration import regenerate
from poolboy.reconcilers.handle.status import set_conditions, write_status
from poolboy.result import PermanentError, Result


def _read_claim(ctx: Context, handle: dict[str, Any]) -> dict[str, Any] | None:
    """The bound claim, or None when it is gone, including when a new claim now has its name (another uid)."""
    ref = (handle.get("spec") or {}).get("resourceClaim")
    if not ref:
        return None
    claim = ctx.kube.get_or_none(ref.get("apiVersion") or ctx.settings.api_version, RESOURCE_CLAIM, ref["name"],
                                 ref["namespace"])
    return claim if claim is not None and binding.bound_to(ctx, handle, claim) else None


def _record_error(ctx: Context, run: HandleRun, error: PermanentError) -> None:
    previous = conditions.get_condition((run.handle.get("status") or {}).get("conditions"), "Synced") or {}
    run.status["resources"] = run.status_resources
    set_conditions(ctx, run.status, run.handle, error)
    run.handle = write_status(ctx, run.handle, run.status)
    if previous.get("message") != error.message:
        ctx.events.emit(run.handle, error.reason, error.message, type="Warning")


def _live(ctx: Context, handle: dict[str, Any]) -> Result:
    ctx.prefetch(reads.handle_reads(ctx, handle))  # claim, namespace, providers, resources: one round trip
    read_version = resource_version(handle)
    claim = _read_claim(ctx, handle)
    if is_ignored(ctx, claim):
        # even expiry waits: it would delete the ignored claim (docs/behaviour.md#triggers-and-finalizers); resuming
        # runs it again
        return Result()
    providers = Providers(ctx)
    cleaning = reuse.live(ctx, handle, claim, providers)  # released, cleaned or returned to its pool
    if cleaning is not None:
        return cleaning
    expired = expiry(ctx, handle, claim)
    if expired is not None:
        return expired
    old_status = handle.get("status") or {}
    run: HandleRun | None = None
    try:
        with refusals.as_permanent():
            handle = regenerate(ctx, handle, claim, providers)
            run = HandleRun(ctx, handle, claim, providers)
            on_standby = standby.prepare(run)
            run.manage_all()
            run.compute_health()
            standby.settle(run, on_standby)
            reuse.show_running(run.status, run.handle, providers)
    except PermanentError as error:
        run = run or HandleRun(ctx, handle, claim, providers)
        _record_error(ctx, run, error)
        raise PermanentError(error.reason, error.message, error.recheck_after,
                             wake=unique_keys(claim_key(handle))) from error
    run.status["resources"] = run.status_resources
    set_conditions(ctx, run.status, run.handle, None)
    changed = run.status != (run.handle.get("status") or {}) or run.status != old_status
    run.handle = write_status(ctx, run.handle, run.status)
    waiting: tuple[str, ...] = ()
    unbound = not (run.handle.get("spec") or {}).get("resourceClaim")
    if changed and unbound:
        waiting = binding.waiting_claim_keys(ctx, run.handle)  # an unbound handle appeared or changed
    # Only an unbound handle counts in its pool (its status lists unbound handles); the bind itself wakes the
    # pool, so a bound handle's later status changes (resource created, ready) need no pool run, each of which
    # lists every unbound handle of the pool.
    # The claim mirrors this handle's status and (itself, from the watch) its resources' states: it needs a run
    # only when this run changed the handle. A resync of an unchanged handle costs its claim nothing.
    handle_changed = changed or resource_version(run.handle) != read_version
    wake = unique_keys(claim_key(run.handle) if handle_changed else None, *waiting)
    # a run that must run once more (still changing, or asked back on standby as it resumed) is due at once: the
    # delaying queue runs it after this run ends (a wake of its own key would join this very run)
    again = ctx.now if run.run_again else None
    next_runs = [t for t in (requeue_at(run.handle), clock_rerun(ctx, providers.cache.values()), again) if t]
    # What the pool shows of an unbound handle (its counts, its list) follows at the next tick; other changes of it
    # only matter to the pool's next decision, which the batching window serves.
    pool = pool_key(ctx, run.handle) if changed and unbound else None
    shown_changed = pool is not None and _shown_in_pool(run.status) != _shown_in_pool(old_status)
    return Result(requeue_at=min(next_runs) if next_runs else None, wake=wake, hold=unique_keys(pool),
                  hold_seconds=0.0 if shown_changed else None)


def _shown_in_pool(status: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What a pool's status shows of one of its unbound handles: its readiness, health and state."""
    return status.get("ready"), status.get("healthy"), status.get("state")


#: converge one handle (see the module docstring); conflicts re-run from fresh reads
reconcile = preamble.ObjectReconciler(RESOURCE_HANDLE, live=_live, deleting=cleanup)

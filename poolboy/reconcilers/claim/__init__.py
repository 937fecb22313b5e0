"""ResourceClaim reconciler: select providers, initialise, approve, validate, bind or create a handle, propagate
the claim into the handle, and mirror the handle (and the live managed resources) into the claim's status.

Level-based (docs/behaviour.md#design-rules, rule 2): every run reads the claim, its providers, its handle and the
managed resources fresh, computes the desired claim status, and writes it once, with the claim's resourceVersion as
precondition, only when it changed. A Conflict anywhere re-runs the whole computation from fresh reads
(:class:`poolboy.reconcilers.preamble.ObjectReconciler`), which is safe because every step is idempotent. Events are
emitted only after the status write succeeded, so a retried run does not repeat them.

The claim's status has one writer: this package. The handle's spec may be written here (bind, propagation), its
status never; cross-object effects are woken keys.

The parts: :mod:`.claim_run` (the staged write and the events), :mod:`.modes` (provider mode and resources mode
behind one interface), :mod:`.bind` (the bind decision, top to bottom: which handle the claim gets, bound or created,
and what the claim records of it), :mod:`.waiting` (no handle yet: the claim queue), :mod:`.propagation` (claim →
handle), :mod:`.mirroring` (handle → claim), :mod:`.lifecycle` (deletion, detaching, autoDelete/autoDetach).
"""

from __future__ import annotations

from typing import Any

from poolboy import keys
from poolboy.context import Context
from poolboy.domain import binding, claim_bounds, claim_lifespan, reads, refusals
from poolboy.domain.object_meta import is_ignored
from poolboy.domain.provider import ProviderNotFound
from poolboy.kinds import RESOURCE_CLAIM
from poolboy.reconcilers import preamble
from poolboy.reconcilers.claim import lifecycle, mirroring, propagation, resuming, waiting
from poolboy.reconcilers.claim.bind import bind_or_create, record_binding
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode, check_providers, select_mode
from poolboy.result import PermanentError, Result
from poolboy.utils import timeutil


def _live(ctx: Context, claim: dict[str, Any]) -> Result:
    ctx.prefetch(reads.claim_reads(ctx, claim))  # providers, handle, resources: one round trip, not one each
    run = ClaimRun(ctx, claim)
    run.patch_claim(preamble.finalizer_patch(ctx, claim))  # staged into the run's one metadata write
    requested_start = claim_lifespan.parse_optional((run.spec.get("lifespan") or {}).get("start"))
    if requested_start is not None and requested_start > ctx.now:
        run.flush_claim()
        return Result(requeue_at=requested_start)  # nothing at all before the requested start

    if (run.status.get("resourceHandle") or {}).get("detached"):
        run.flush_claim()
        return lifecycle.detached(ctx, run.claim)

    try:
        with refusals.as_permanent():
            return process(run)
    except PermanentError as error:
        run.fail(error)
        raise


def _cleanup(ctx: Context, claim: dict[str, Any]) -> preamble.Cleaned:
    """Claim deleted: its handles go too, unless it was detached; the preamble then removes the finalizer."""
    names, wake, released = lifecycle.delete_handles(ctx, claim)
    if names:  # a namespace at its queue cap holds one handle fewer: its waiting claims may go now
        wake += waiting.namespace_waiters(ctx, claim["metadata"]["namespace"])
    parts = []
    if names - released:
        parts.append(f"deleted ResourceHandle {', '.join(sorted(names - released))}")
    if released:  # reused: cleaned and returned to its pool (docs/pools.md, "Reuse")
        parts.append(f"released ResourceHandle {', '.join(sorted(released))} for cleaning")
    what = "; ".join(parts) or "no ResourceHandle to delete"
    return preamble.Cleaned(Result(wake=tuple(wake)), ("Deleted", f"ResourceClaim deleted; {what}."))


#: converge one claim (see the module docstring); conflicts re-run from fresh reads
reconcile = preamble.ObjectReconciler(RESOURCE_CLAIM, live=_live, deleting=_cleanup,
                                      finalizer=preamble.Finalizer.STAGED)


def process(run: ClaimRun) -> Result:
    """The steps of one run over a live claim, in order; the claim's size is checked before anything it costs."""
    claim_bounds.check(run.spec)
    mode = select_mode(run)
    check_providers(run, mode)
    initialise(run, mode)
    if not mode.admit(run):  # approval pending or rejected: only an unbound claim waits for it
        run.not_bound()
        run.write_status()
        return run.result(mode.providers)

    handle = binding.find_bound_handle(run.ctx, run.claim, recorded=run.known_handle(), fresh=run.may_have_bound)
    recorded = recorded_handle(run)
    if handle is None and recorded:
        # The bound handle is gone or deleting: its deletion cascades to this claim; never rebind.
        run.condition("Bound", False, "HandleDeleted", f"ResourceHandle {recorded} was deleted.")
        run.condition("Synced", True, "Synced", "")
        run.not_bound(f"ResourceHandle {recorded} was deleted.")
        run.write_status()
        return run.result(mode.providers)
    if handle is None:
        handle = bind_or_create(run, mode)
        if handle is None:
            run.not_bound()
            run.write_status()
            return run.result(mode.providers)
    elif is_ignored(run.ctx, handle):
        # Poolboy writes nothing to an ignored handle and mirrors nothing from it, and autoDelete/autoDetach
        # wait until neither object is ignored; un-ignoring it re-runs this claim.
        run.write_status()
        return run.result(mode.providers)
    elif not recorded:
        record_binding(run, mode, handle, "Bound", f"Adopted ResourceHandle {handle['metadata']['name']}")
    handle = resuming.replace_stuck(run, mode, handle)

    waiting.set_waiting(run, False)
    limits = propagation.handle_limits(run, mode, handle)
    propagation.first_ready(run, handle, limits)
    handle = propagation.propagate(run, mode, handle, limits)
    mirroring.mirror(run, handle, limits)
    mirroring.warn_before_end(run)
    if lifecycle.auto_delete_or_detach(run, mode, handle):
        return Result(wake=(keys.make(keys.CLAIM, run.meta["namespace"], run.meta["name"]),
                               keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"])))
    mirroring.conclude(run, handle, limits)
    resuming.show(run, handle)
    run.write_status()
    return run.result(mode.providers)


def recorded_handle(run: ClaimRun) -> str | None:
    """The name of the handle the claim's status records as bound, if any."""
    name: str | None = (run.status.get("resourceHandle") or {}).get("name")
    return name


def initialise(run: ClaimRun, mode: Mode) -> None:
    """Once per claim: the init timestamp annotation, and (resources mode) the defaulted resources in the spec."""
    annotation = run.ctx.label("resource-claim-init-timestamp")
    if annotation in (run.meta.get("annotations") or {}):
        return
    patch: dict[str, Any] = {"metadata": {"annotations": {annotation: timeutil.format_timestamp(run.ctx.now)}}}
    spec = mode.initial_spec(run)
    if spec is not None:
        patch["spec"] = spec
    run.patch_claim(patch)


__all__ = ["ProviderNotFound", "reconcile"]

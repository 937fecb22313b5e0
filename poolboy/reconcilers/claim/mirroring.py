"""Handle → claim: the bound handle (and the live managed resources) mirrored into the claim's status.

The claim is all the user sees: its status carries the handle's lifespan, the state of each managed resource
(read fresh, pruned), the handle's ready/healthy aggregates, warnings ahead of the lifespan end, and conditions
that surface an error the handle reconciler met while creating the resources.
"""

from __future__ import annotations

import copy
from typing import Any

from poolboy import keys
from poolboy import kube as kube_errors
from poolboy.domain import claim_lifespan, claim_status, lifespan_warnings, ownership, redaction
from poolboy.domain import conditions as cond
from poolboy.domain import lifespan as lifespan_rules
from poolboy.domain.provider import Provider
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.propagation import clamp_explanation
from poolboy.utils import timeutil


def mirror(run: ClaimRun, handle: dict[str, Any], limits: lifespan_rules.Limits) -> None:
    """The handle's lifespan and resources into the claim's status; a LifespanChange Event when the end moved."""
    status = run.status
    previous_end = (status.get("lifespan") or {}).get("end")
    status["lifespan"] = claim_lifespan.status_lifespan(status.get("lifespan"), handle, limits)
    if not status["lifespan"].get("start"):
        status["lifespan"]["start"] = timeutil.format_timestamp(run.ctx.now)
    new_end = status["lifespan"].get("end")
    if new_end != previous_end and not run.bound_now:
        if new_end:
            run.event("Lifespan end changed", f"Lifespan end changed from {previous_end or 'unset'} to {new_end}",
                      action="LifespanChange")
        else:
            run.event("Lifespan end cleared", "Lifespan end cleared", action="LifespanChange")
    redactions = Redactions(run, handle)
    stored = [redactions.stored(index, entry) for index, entry in enumerate(status.get("resources") or [])]
    status["resources"] = claim_status.mirror_resources(stored, handle, read_states(run, handle, redactions))
    claim_status.copy_aggregates(status, handle)
    end = claim_lifespan.parse_optional(new_end)
    if end is not None:
        run.requeue.append(end)
        if end <= run.ctx.now:  # the handle outlived its end (its expiry waited while this claim was ignored)
            run.wake.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))


def warn_before_end(run: ClaimRun) -> None:
    """A Warning Event and ``status.lifespan.warnings`` at the configured lead times before the lifespan end,
    and the next lead time as a deadline (:mod:`poolboy.domain.lifespan_warnings`)."""
    status_lifespan = run.status.get("lifespan") or {}
    end = claim_lifespan.parse_optional(status_lifespan.get("end"))
    decision = lifespan_warnings.decide(end, run.ctx.now, run.ctx.settings.lifespan_warning_leads,
                                        status_lifespan.get("warnings"),
                                        claim_lifespan.parse_optional(status_lifespan.get("firstReady")
                                                                      or status_lifespan.get("start")))
    if decision.record:
        run.status.setdefault("lifespan", {})["warnings"] = decision.record
    else:
        status_lifespan.pop("warnings", None)
    if decision.announce is not None and end is not None:
        run.event(lifespan_warnings.REASON, lifespan_warnings.message(end, decision.announce), "Warning")
    if decision.next_at is not None:
        run.requeue.append(decision.next_at)
    if decision.ending or cond.get_condition(run.status.get("conditions"), lifespan_warnings.CONDITION):
        run.condition(lifespan_warnings.CONDITION, *lifespan_warnings.condition(end, decision.ending))


class Redactions:
    """The ``statusRedactions`` patterns of each resource's provider, read once per provider and run (none when the
    provider is gone: Secrets stay redacted whatever the patterns)."""

    def __init__(self, run: ClaimRun, handle: dict[str, Any]) -> None:
        self.run = run
        self.spec_resources = (handle.get("spec") or {}).get("resources") or []
        self.by_provider: dict[str | None, tuple[str, ...]] = {}

    def __call__(self, index: int) -> tuple[str, ...]:
        entry = self.spec_resources[index] if index < len(self.spec_resources) else {}
        name = (entry.get("provider") or {}).get("name")
        if name not in self.by_provider:
            provider = Provider.get_or_none(self.run.ctx, name) if name else None
            self.by_provider[name] = redaction.patterns_of(provider.status_redactions) if provider else ()
        return self.by_provider[name]

    def stored(self, index: int, entry: dict[str, Any]) -> dict[str, Any]:
        """A claim's stored entry with its state redacted as a fresh one would be: a state shown before a rule
        existed (an upgrade, a new ``statusRedactions``) loses its values even while the resource does not change."""
        state = entry.get("state")
        if not isinstance(state, dict):
            return entry
        return {**entry, "state": redaction.redact(copy.deepcopy(state), self(index))}


def read_states(run: ClaimRun, handle: dict[str, Any], redactions: Redactions) -> dict[int, dict[str, Any] | None]:
    """The live managed resources, read fresh, pruned and redacted (never from an event payload); an object the
    handle may not manage (:mod:`poolboy.domain.ownership`) is never shown."""
    states: dict[int, dict[str, Any] | None] = {}
    for index, entry in enumerate((handle.get("status") or {}).get("resources") or []):
        reference = entry.get("reference") or {}
        if not reference.get("name") or not reference.get("apiVersion") or not reference.get("kind"):
            continue
        try:
            live = run.ctx.kube.get_or_none(reference["apiVersion"], reference["kind"], reference["name"],
                                            reference.get("namespace"))
        except kube_errors.ApiMissing:
            live = None
        if live is None or not ownership.may_manage(run.ctx.settings.domain, handle, live):
            states[index] = None
            continue
        states[index] = claim_status.prune_state(live, run.ctx.settings.domain, redactions(index))
    return states


def conclude(run: ClaimRun, handle: dict[str, Any], limits: lifespan_rules.Limits) -> None:
    """The claim's Synced, Bound, Ready and Healthy conditions once it is bound."""
    handle_status = handle.get("status") or {}
    handle_synced = cond.get_condition(handle_status.get("conditions"), "Synced") or {}
    if handle_synced.get("status") == cond.FALSE:
        # A user-fixable error met while creating the resources (template error, a definition without
        # apiVersion/kind, a missing API) is found by the handle reconciler, but the claim is all the user can
        # see: surface it here, with an Event in the user's namespace. It clears once the handle is in sync.
        run.synced_error(handle_synced.get("reason") or "ResourceError", handle_synced.get("message") or "")
    elif clamped := clamp_explanation(run, handle, limits):
        # processed, but not as asked: the user's requested end was cut to the provider's maximum
        run.synced_warning(True, "LifespanClamped", clamped)
    else:
        run.condition("Synced", True, "Synced", "")
    run.condition("Bound", True, "Bound", f"Bound to ResourceHandle {handle['metadata']['name']}.")
    ready, reason, message = claim_status.ready_condition(handle_status)
    run.condition("Ready", ready if ready is not None else False, reason, message)
    healthy, reason, message = claim_status.healthy_condition(handle_status)
    run.condition("Healthy", healthy, reason, message)

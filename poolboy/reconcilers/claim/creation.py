"""Creating the handle of a claim that found no candidate to bind.

The handle gets the lifespan its providers allow (default, maximum and relative maximum combined; the claim's
requested end clamped to them) and, when the claim asked for an end, a record of that request, so that the handle
is not clamped again for the same request. Creation is idempotent by name
(:func:`poolboy.domain.handle_factory.create_or_adopt`): a retried run adopts the handle it already created. The claim
names it before it is created, as before a bind (:meth:`poolboy.reconcilers.claim.claim_run.ClaimRun.intend`), so a
concurrent run of the claim does not bind a pool's handle meanwhile.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from poolboy import keys
from poolboy.domain import claim_lifespan, handle_factory
from poolboy.domain import lifespan as lifespan_rules
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode
from poolboy.reconcilers.claim.recording import record_binding
from poolboy.utils import timeutil


def create_handle(run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]]) -> dict[str, Any]:
    """Create (or adopt) the claim's own handle and record it in the claim's status."""
    limits = lifespan_rules.combine_limits([
        dataclasses.replace(p.lifespan_limits(run.ctx, resource_claim=run.claim),
                            default_raw=p.lifespan.get("default"), maximum_raw=p.lifespan.get("maximum"),
                            relative_maximum_raw=p.lifespan.get("relativeMaximum"))
        for p in mode.providers])
    requested = claim_lifespan.parse_optional((run.spec.get("lifespan") or {}).get("end"))
    annotations = {run.ctx.label(claim_lifespan.LIFESPAN_REQUEST_ANNOTATION):
                   claim_lifespan.lifespan_request(requested, limits)} if requested is not None else None
    name = handle_factory.handle_name(run.meta["uid"])
    run.intend(name)
    # the create's ADDED event would run the handle while this run still writes; recording the binding wakes it
    run.ctx.will_wake(keys.make(keys.HANDLE, run.ctx.settings.operator_namespace, name))
    handle, created = handle_factory.create_or_adopt(run.ctx, run.claim, provider_spec=mode.provider_spec(run),
                                                     resources=claim_resources,
                                                     lifespan=_spec_lifespan(run, limits, requested) or None,
                                                     annotations=annotations)
    name = handle["metadata"]["name"]
    if created:
        record_binding(run, mode, handle, "HandleCreated", f"Created ResourceHandle {name}")
    else:
        record_binding(run, mode, handle, "Bound", f"Adopted ResourceHandle {name}")
    return handle


def _spec_lifespan(run: ClaimRun, limits: lifespan_rules.Limits, requested: datetime | None) -> dict[str, Any]:
    """The new handle's ``spec.lifespan``: the combined limits and the end the claim gets."""
    spec_lifespan: dict[str, Any] = {}
    if limits.default is not None:
        spec_lifespan["default"] = timeutil.format_interval(limits.default)
    # maximum and relativeMaximum keep the provider's raw strings (templates are re-evaluated every reconcile)
    if limits.maximum is not None:
        spec_lifespan["maximum"] = limits.maximum_raw or timeutil.format_interval(limits.maximum)
    if limits.relative_maximum is not None:
        spec_lifespan["relativeMaximum"] = limits.relative_maximum_raw or \
            timeutil.format_interval(limits.relative_maximum)
    end = lifespan_rules.new_handle_end(requested, limits, run.ctx.now, run.ctx.now)
    if end is not None:
        spec_lifespan["end"] = timeutil.format_timestamp(end)
    return spec_lifespan

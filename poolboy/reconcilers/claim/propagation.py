"""Claim → handle: what the claim asks for carried into its bound handle's spec.

The handle's provider, resources, templates and requested lifespan end follow the claim in ONE conditional JSON
patch (its first op tests the handle's resourceVersion): a handle changed meanwhile makes the whole run start
again from fresh reads instead of overwriting someone else's change. A requested end beyond the providers'
maximum is clamped once, and the request is recorded on the handle so that the same request is not clamped again.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from poolboy import keys
from poolboy import kube as kube_errors
from poolboy.domain import binding, claim_lifespan
from poolboy.domain import lifespan as lifespan_rules
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode
from poolboy.result import PermanentError
from poolboy.utils import timeutil

log = logging.getLogger(__name__)


def handle_limits(run: ClaimRun, mode: Mode, handle: dict[str, Any]) -> lifespan_rules.Limits:
    return claim_lifespan.handle_limits(handle, run.claim, mode.template_vars(handle))


def first_ready(run: ClaimRun, handle: dict[str, Any], limits: lifespan_rules.Limits) -> None:
    """On first ready: record firstReady and reset the requested end to now + default (the lifespan counts from
    the moment the resources can be used, not from the claim's creation)."""
    status_lifespan = run.status.setdefault("lifespan", {})
    if (handle.get("status") or {}).get("ready") is not True or status_lifespan.get("firstReady"):
        return
    status_lifespan["firstReady"] = timeutil.format_timestamp(run.ctx.now)
    if limits.default is None:
        return
    start = claim_lifespan.parse_optional(status_lifespan.get("start"))
    maximum = lifespan_rules.maximum_end(start, run.ctx.now, limits, run.ctx.now)
    try:
        new_end = lifespan_rules.first_ready_end((run.spec.get("lifespan") or {}).get("end"), start,
                                                 limits.default, run.ctx.now, maximum)
    except lifespan_rules.LifespanError as error:
        raise PermanentError("InvalidLifespan", str(error)) from error
    if new_end is not None:
        run.patch_claim({"spec": {"lifespan": {"end": timeutil.format_timestamp(new_end)}}})


def propagate(run: ClaimRun, mode: Mode, handle: dict[str, Any], limits: lifespan_rules.Limits) -> dict[str, Any]:
    """Claim → handle spec (provider, resources, templates, requested end); one conditional JSON patch."""
    spec = handle.get("spec") or {}
    resources = mode.propagated_resources(run, spec)
    # the claim uid annotation goes onto a handle bound before uids were kept
    annotations = binding.claim_uid_annotation(run.ctx, run.claim)
    requested = claim_lifespan.parse_optional((run.spec.get("lifespan") or {}).get("end"))
    end = None
    if requested is not None:
        end, request = _end_for_request(run, handle, requested, limits)
        annotations[run.ctx.label(claim_lifespan.LIFESPAN_REQUEST_ANNOTATION)] = request
    ops = binding.handle_spec_ops(handle, provider_spec=mode.provider_spec(run), resources=resources,
                                  lifespan_end=end, annotations=annotations)
    if not ops:
        return handle
    ops.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": handle["metadata"]["resourceVersion"]})
    try:
        handle = run.ctx.kube.patch_json(run.ctx.settings.api_version, RESOURCE_HANDLE, handle["metadata"]["name"],
                                         handle["metadata"]["namespace"], ops)
    except kube_errors.Invalid as error:  # the handle changed under us: recompute from fresh reads
        raise kube_errors.Conflict(409, "Conflict", f"handle changed during propagation: {error}") from error
    run.wake.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))
    return handle


def _end_for_request(run: ClaimRun, handle: dict[str, Any], requested: datetime,
                     limits: lifespan_rules.Limits) -> tuple[datetime, str]:
    """The handle end for the claim's requested end, clamped once to the maximum, and the inputs to record."""
    request = claim_lifespan.lifespan_request(requested, limits)
    recorded = (handle["metadata"].get("annotations") or {}).get(
        run.ctx.label(claim_lifespan.LIFESPAN_REQUEST_ANNOTATION))
    maximum = claim_lifespan.maximum_end(run.claim_with_status(), limits, run.ctx.now)
    current = claim_lifespan.parse_optional(((handle.get("spec") or {}).get("lifespan") or {}).get("end"))
    end = claim_lifespan.end_for_request(requested, maximum, current, recorded == request)
    if end != requested and end != current:
        log.info("claim %s/%s: requested end %s clamped to %s", run.meta["namespace"], run.meta["name"],
                 timeutil.format_timestamp(requested), timeutil.format_timestamp(end))
    return end, request


def clamp_explanation(run: ClaimRun, handle: dict[str, Any], limits: lifespan_rules.Limits) -> str | None:
    """The requested ``spec.lifespan.end`` against the end the handle got for it (clamped to the maximum)."""
    return claim_lifespan.clamp_explanation(
        claim_lifespan.parse_optional((run.spec.get("lifespan") or {}).get("end")),
        claim_lifespan.parse_optional(((handle.get("spec") or {}).get("lifespan") or {}).get("end")), limits)

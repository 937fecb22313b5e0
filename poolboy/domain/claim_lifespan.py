"""Claim-side lifespan decisions (docs/behaviour.md#handle-creation, #propagation, #claim-status, #lifespans).

After bind, the handle's ``spec.lifespan`` strings are the authority (a pool handle carries its pool's or its
provider's; a created handle its provider's). They may be templates, so they are rendered on every reconcile with
``resource_claim``/``resource_handle`` and the template vars; the arithmetic itself lives in
:mod:`poolboy.domain.lifespan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from poolboy.domain import lifespan
from poolboy.result import PermanentError
from poolboy.utils import templating, timeutil


def _render(raw: Any, key: str, variables: dict[str, Any], template_vars: dict[str, Any]) -> Any:
    if isinstance(raw, str) and templating.has_template(raw):
        try:
            return templating.render_string(raw, variables, template_vars)
        except templating.TemplateError as error:
            raise PermanentError("InvalidLifespan", f"ResourceHandle lifespan.{key}: {error}") from error
    return raw


def handle_limits(handle: Mapping[str, Any], claim: Mapping[str, Any] | None,
                  template_vars: dict[str, Any] | None = None) -> lifespan.Limits:
    """Evaluated ``default/maximum/relativeMaximum`` of a handle's ``spec.lifespan`` (unparsable → permanent)."""
    raw = (handle.get("spec") or {}).get("lifespan") or {}
    variables = {"resource_claim": templating.wrap_object(claim) if claim is not None else None,
                 "resource_handle": templating.wrap_object(handle)}
    tv = template_vars or {}
    rendered = {key: _render(raw.get(key), key, variables, tv) for key in ("default", "maximum", "relativeMaximum")}
    try:
        return lifespan.Limits.from_spec(rendered, raw=raw)
    except lifespan.LifespanError as error:
        raise PermanentError("InvalidLifespan", f"ResourceHandle {handle['metadata']['name']}: {error}") from error


def parse_optional(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        return timeutil.parse_timestamp(value)
    except ValueError:
        return None


def claim_start(claim: Mapping[str, Any]) -> datetime | None:
    """status.lifespan.start, else spec.lifespan.start, else creationTimestamp (docs/behaviour.md#lifespans); unparsable
    → None."""
    try:
        return lifespan.lifespan_start(claim)
    except lifespan.LifespanError:
        return None


def maximum_end(claim: Mapping[str, Any], limits: lifespan.Limits, now: datetime) -> datetime | None:
    """The latest end the claim may have: (firstReady or start) + maximum, and now + relativeMaximum."""
    first_ready = parse_optional(((claim.get("status") or {}).get("lifespan") or {}).get("firstReady"))
    start = claim_start(claim) or now
    return lifespan.maximum_end(start, first_ready, limits, now)


def status_lifespan(current: Mapping[str, Any] | None, handle: Mapping[str, Any], limits: lifespan.Limits,
                    *, start: datetime | None = None) -> dict[str, Any]:
    """``status.lifespan`` mirrored from the handle: end, evaluated maximum/relativeMaximum (single unit).

    ``start`` is given at bind/create (the bind time); otherwise the recorded start is kept. Empty values are left
    out: the status schema rejects null.
    """
    result = dict(current or {})
    if start is not None:
        result["start"] = timeutil.format_timestamp(start)
    end = ((handle.get("spec") or {}).get("lifespan") or {}).get("end")
    if end:
        result["end"] = end
    else:
        result.pop("end", None)
    for key, value in (("maximum", limits.maximum), ("relativeMaximum", limits.relative_maximum)):
        if value is not None and value.total_seconds() >= 0:
            result[key] = lifespan.status_interval(value)
        else:
            result.pop(key, None)
    return result


#: handle annotation (``D/…``) recording the inputs its ``spec.lifespan.end`` was last computed from
LIFESPAN_REQUEST_ANNOTATION = "resource-claim-lifespan-request"


def lifespan_request(requested: datetime, limits: lifespan.Limits) -> str:
    """The inputs of a requested end's clamp, as recorded on the handle: the request and the evaluated limits."""
    parts = [f"end={timeutil.format_timestamp(requested)}"]
    for key, value in (("maximum", limits.maximum), ("relativeMaximum", limits.relative_maximum)):
        if value is not None:
            parts.append(f"{key}={timeutil.format_interval(value)}")
    return ",".join(parts)


def end_for_request(requested: datetime, max_end: datetime | None, current_end: datetime | None,
                    same_request: bool) -> datetime:
    """The handle end a claim's requested end asks for (docs/behaviour.md#propagation).

    A request within the limits is applied exactly. One beyond them is clamped to the maximum end once: while the
    inputs are those the handle's end was computed from (``same_request``) and that end is still within the limits,
    it stays. Why: the maximum end includes ``now + relativeMaximum``, which moves on every second, so clamping
    afresh on every reconcile would rewrite the handle each time and push its end ever further out.
    """
    end = lifespan.clamp_end(requested, max_end)
    if end == requested or not same_request or current_end is None:
        return end
    return current_end if max_end is None or current_end <= max_end else end


def clamp_explanation(requested: datetime | None, end: datetime | None, limits: lifespan.Limits) -> str | None:
    """Why the lifespan end is earlier than the end the user requested, or None when the request was applied.

    The message names the request, the limits that apply and the resulting end, and stays the same while they do
    (the maximum end of a ``relativeMaximum`` moves every second, so it is named as the interval, not a time):
    it is the ``Synced`` condition's message and a Warning Event once per change, never on a converged re-run.
    """
    if requested is None or end is None or end >= requested:
        return None
    bounds = [f"{name} {timeutil.format_interval(value)}"
              for name, value in (("maximum", limits.maximum), ("relativeMaximum", limits.relative_maximum))
              if value is not None]
    beyond = f" ({', '.join(bounds)})" if bounds else ""
    return (f"Requested lifespan end {timeutil.format_timestamp(requested)} is beyond the maximum lifespan{beyond}; "
            f"the lifespan end is {timeutil.format_timestamp(end)}.")

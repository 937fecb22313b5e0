"""The pool's autoscaling step (``spec.autoscaling``): measure, decide, scale down, report.

:mod:`poolboy.domain.autoscaling` holds the model. The pool measures its demand: a handle its last status listed
as unbound that is now bound to a claim is one bind (read from the shared cache, one read per vanished handle), and
a handle created for a claim of the pool's provider is one claim the pool missed (a ZCOUNT of the cache's index per
window; without the cache, misses are not counted).
With ``spec.autoscaling.period`` the same round trip reads the claims made in each bucket of the period that ended
since the last run, and the pool sizes for the higher of the measured rate and the learned profile's forecast
(:mod:`poolboy.domain.demand_profile`), re-running when that forecast changes.
Scaling up needs nothing here: the target is passed to the creation step as handles above ``minAvailable``.
Scaling down deletes unbound handles beyond the target, the newest unready ones first, then the newest ready
ones; never a bound handle (the delete is conditional on the resourceVersion read unbound), nor one a
ResourcePoolScaling made (its count would only make the pool replace it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from poolboy.context import Context
from poolboy.domain import autoscaling, conditions, demand_profile
from poolboy.domain.binding import scopes
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers import pool_members
from poolboy.result import PermanentError

CONDITION = "Autoscaled"


@dataclass(frozen=True)
class Step:
    policy: autoscaling.Policy
    decision: autoscaling.Decision
    record: dict[str, Any]
    message: str
    recheck_at: datetime | None  # a delayed scale-down, or the learned profile's forecast, changes then


def _observe_binds(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]]) -> int:
    """Handles the pool's last status listed unbound that are now bound to a claim."""
    before = {entry.get("name") for entry in (pool.get("status") or {}).get("resourceHandles") or []}
    vanished = before - {h["metadata"]["name"] for h in handles} - {None}
    binds = 0
    for name in vanished:
        handle = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_HANDLE, name,
                                      ctx.settings.operator_namespace)
        if handle is not None and (handle.get("spec") or {}).get("resourceClaim"):
            binds += 1
    return binds


def _missed(ctx: Context, pool: dict[str, Any], since: list[datetime]) -> list[int]:
    """Claims of the pool's provider that got a handle made for them since each of ``since`` (one round trip)."""
    counts = None
    if ctx.index is not None:
        scope = scopes.provider_scope(scopes.first_provider(pool))
        counts = ctx.index.created_since(scope, [moment.timestamp() for moment in since])
    return counts or [0] * len(since)


def _learn(profile: demand_profile.Profile, now: datetime, binds: int, made_since: list[int],
           time_to_ready: float | None) -> tuple[demand_profile.Profile, float | None, datetime | None]:
    """The profile after this run, the rate it expects over the next time to ready and when that expectation
    changes (None and None while the time to ready is not measured)."""
    profile = demand_profile.advance(profile, now, binds, made_since)
    if time_to_ready is None:
        return profile, None, None
    horizon = timedelta(seconds=time_to_ready)
    return profile, demand_profile.forecast(profile, now, horizon), demand_profile.next_change(profile, now, horizon)


def _reevaluate_at(ctx: Context, rate: float, profile: demand_profile.Profile | None) -> datetime | None:
    """When a pool whose demand moves with time runs again on its own schedule: its measured rate falls as its binds
    leave the window, and a learned period's expectation moves with the clock, while nothing about the pool changes
    (its periodic sweep passes over a converged pool). None: no demand in the window and no period, nothing moves."""
    if rate <= 0 and profile is None:
        return None
    return ctx.now + timedelta(seconds=ctx.settings.manage_pools_interval)


def plan(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]]) -> Step | None:
    """This run's target, or None for a pool without autoscaling; ``InvalidAutoscaling`` when it is wrong."""
    spec, status = pool.get("spec") or {}, pool.get("status") or {}
    try:
        chosen = autoscaling.policy(spec)
    except ValueError as error:
        raise PermanentError("InvalidAutoscaling", str(error)) from None
    if chosen is None:
        return None
    previous = status.get("autoscaling") or {}
    binds = _observe_binds(ctx, pool, handles)
    buckets = autoscaling.record_binds(previous.get("binds"), binds, ctx.now, chosen)
    created = autoscaling._parse(pool["metadata"].get("creationTimestamp"))
    short = autoscaling.short_window(chosen)
    profile = demand_profile.load(previous.get("profile"), chosen.period, ctx.now) if chosen.period else None
    closing = demand_profile.boundaries(profile, ctx.now) if profile else []
    missed, missed_short, *made_since = _missed(ctx, pool, [ctx.now - chosen.window, ctx.now - short, *closing])
    rate = max(autoscaling.claim_rate(buckets, ctx.now, chosen, created, missed),
               autoscaling.claim_rate(buckets, ctx.now, chosen, created, missed_short, short))
    measured = status.get("timeToReadySeconds")
    time_to_ready = float(measured) if isinstance(measured, int | float) and not isinstance(measured, bool) else None
    record: dict[str, Any] = {"claimsPerHour": round(rate * 3600, 1)}
    expected, forecast_changes = None, None
    if profile is not None:
        profile, expected, forecast_changes = _learn(profile, ctx.now, binds, made_since, time_to_ready)
        if expected is not None:
            record["expectedPerHour"] = round(expected * 3600, 1)
    decision = autoscaling.decide(max(rate, expected or 0.0), time_to_ready, chosen, previous, ctx.now)
    record.update({"desired": decision.desired, "target": decision.target, "missed": missed, "binds": buckets})
    if time_to_ready is not None:
        record["timeToReadySeconds"] = round(time_to_ready)
    if decision.lower_since:
        record["lowerSince"] = decision.lower_since
    if profile is not None:
        record["profile"] = demand_profile.dump(profile)
    recheck = [t for t in (decision.recheck_at, forecast_changes, _reevaluate_at(ctx, rate, profile)) if t is not None]
    return Step(chosen, decision, record, autoscaling.explain(rate, time_to_ready, decision, chosen, expected),
                min(recheck) if recheck else None)


def extra(step: Step | None, pool: dict[str, Any]) -> int:
    """Handles to keep above ``minAvailable``."""
    return 0 if step is None else max(0, step.decision.target - int((pool.get("spec") or {}).get("minAvailable") or 0))


def scale_down(ctx: Context, pool: dict[str, Any], handles: list[dict[str, Any]],
               step: Step | None) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """Delete unbound handles beyond the target (see the module docstring)."""
    if step is None or len(handles) <= step.decision.target:
        return pool, handles, []
    scaling_label = ctx.label("resource-pool-scaling-name")

    def choose(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        own = [h for h in found if scaling_label not in (h["metadata"].get("labels") or {})]
        own.sort(key=lambda h: h["metadata"].get("creationTimestamp") or "", reverse=True)
        own.sort(key=lambda h: (h.get("status") or {}).get("ready") is True)  # stable: unready first, newest first
        return own[:max(0, len(own) - step.decision.target)]

    pool, deleted, wake = pool_members.delete_unbound(ctx, pool, choose, "surplus")
    return pool, [h for h in handles if h["metadata"]["name"] not in deleted], wake


def report(ctx: Context, pool: dict[str, Any], status: dict[str, Any], step: Step | None) -> datetime | None:
    """``status.autoscaling``, the ``Autoscaled`` condition, and an Event when the target changed; returns when a
    delayed scale-down is due."""
    if step is None:
        status.pop("autoscaling", None)
        return None
    previous_target = ((pool.get("status") or {}).get("autoscaling") or {}).get("target")
    status["autoscaling"] = step.record
    decision = step.decision
    reason = "ScaleDownDelayed" if decision.target > decision.desired else "Steady"
    status["conditions"] = conditions.set_condition(status.get("conditions"), CONDITION, True, reason, step.message,
                                                    ctx.now, pool["metadata"].get("generation"))
    if previous_target is not None and previous_target != decision.target:
        kind = "ScaledUp" if decision.target > int(previous_target) else "ScaledDown"
        ctx.events.emit(pool, kind, f"Target {previous_target} → {decision.target} unbound handles: "
                                        f"{step.message}")
    return step.recheck_at


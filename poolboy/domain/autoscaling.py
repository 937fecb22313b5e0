"""Demand-driven pool sizes (``spec.autoscaling``), pure: the model, the measurements, the decision.

The model is a base-stock policy. Claims arrive at rate λ; each handle bound is replaced, and a replacement takes
the pool's measured time to ready T. By Little's law about λ·T replacements are provisioning at any moment, and
their number is Poisson(λ·T) distributed (arrivals are Poisson, each stays T: an M/G/∞ queue). A pool that keeps *s*
unbound handles (ready or provisioning) has a ready one for an arriving claim exactly when fewer than *s* are
provisioning, so the smallest *s* with ``P(Poisson(λT) ≤ s − 1) ≥ warmHitRatio``
serves that share of claims warm. The target is *s* within ``[minAvailable, maxAvailable]``.

The rate λ is the demand, not only what the pool served: the pool's binds plus the claims of its provider that found no
pool handle and got a handle made for them (counted from the cache's ``created|provider=<name>`` index,
:func:`~poolboy.domain.binding.candidates.created_entry`) — otherwise an empty pool would measure no demand, and under a
burst the rate it measures would be capped by its own size. λ is the larger of the rate over ``window`` and over its
last sixth (:func:`short_window`): the target rises within a fraction of the window when a burst starts, and the long
window holds it up through short lulls. With ``period`` (a day, a week) the pool also learns how much demand each part
of the period brought in past periods and sizes for the higher of the measured rate and the one it expects over the next
time to ready (:mod:`poolboy.domain.demand_profile`), so that handles for a recurring burst are made before it begins.

It rises at once and falls only after it has been lower for ``scaleDownDelay``, so a lull between bursts does not
throw away handles that took long to make. Binds are counted in at most :data:`MAX_BUCKETS` time buckets kept in
``status.autoscaling.binds``, so the status stays small whatever the rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from poolboy.domain import demand_profile
from poolboy.utils import timeutil

DEFAULT_WINDOW = "30m"
DEFAULT_SCALE_DOWN_DELAY = "10m"
DEFAULT_WARM_HIT_RATIO = 0.95
MAX_BUCKETS = 30
MIN_BUCKET = timedelta(seconds=5)
#: the short window, in which a burst raises the rate sooner: this fraction of ``window``
SHORT_WINDOW_FRACTION = 1 / 6


@dataclass(frozen=True)
class Policy:
    """``spec.autoscaling`` resolved."""

    min_available: int
    max_available: int
    window: timedelta
    scale_down_delay: timedelta
    warm_hit_ratio: float
    period: timedelta | None = None  # the recurring period whose demand the pool learns (demand_profile)

    @property
    def bucket(self) -> timedelta:
        return max(MIN_BUCKET, self.window / MAX_BUCKETS)


def policy(spec: Mapping[str, Any]) -> Policy | None:
    """The pool's autoscaling policy, None when it has none; ``ValueError`` naming the field when it is wrong."""
    raw = spec.get("autoscaling")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValueError("spec.autoscaling: must be an object")
    floor = int(spec.get("minAvailable") or 0)
    ceiling = raw.get("maxAvailable")
    if isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling < floor:
        raise ValueError(f"spec.autoscaling.maxAvailable: {ceiling!r} must be an integer, at least minAvailable "
                         f"({floor})")
    intervals = {}
    for key, default in (("window", DEFAULT_WINDOW), ("scaleDownDelay", DEFAULT_SCALE_DOWN_DELAY)):
        try:
            intervals[key] = timeutil.parse_interval(str(raw.get(key) or default))
        except ValueError as error:
            raise ValueError(f"spec.autoscaling.{key}: {error}") from None
    if intervals["window"].total_seconds() <= 0:
        raise ValueError("spec.autoscaling.window: must be positive")
    ratio = raw.get("warmHitRatio", DEFAULT_WARM_HIT_RATIO)
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio < 1:
        raise ValueError(f"spec.autoscaling.warmHitRatio: {ratio!r} must be a number between 0 and 1")
    period = demand_profile.parse_period(raw["period"]) if raw.get("period") is not None else None
    return Policy(floor, ceiling, intervals["window"], intervals["scaleDownDelay"], float(ratio), period)


def record_binds(buckets: list[dict[str, Any]] | None, count: int, now: datetime,
                 chosen: Policy) -> list[dict[str, Any]]:
    """``[{start, count}, …]`` with ``count`` new binds at ``now``; buckets older than the window are dropped."""
    size = chosen.bucket.total_seconds()
    start = timeutil.format_timestamp(datetime.fromtimestamp(now.timestamp() // size * size, tz=now.tzinfo))
    horizon = now - chosen.window - chosen.bucket
    kept = [dict(b) for b in buckets or [] if (_parse(b.get("start")) or horizon) > horizon]
    if count:
        if kept and kept[-1].get("start") == start:
            kept[-1]["count"] = int(kept[-1].get("count") or 0) + count
        else:
            kept.append({"start": start, "count": count})
    return kept[-(MAX_BUCKETS + 1):]


def short_window(chosen: Policy) -> timedelta:
    return max(chosen.bucket, chosen.window * SHORT_WINDOW_FRACTION)


def claim_rate(buckets: list[dict[str, Any]] | None, now: datetime, chosen: Policy, since: datetime | None,
               missed: int = 0, window: timedelta | None = None) -> float:
    """Claims per second over ``window`` (default the policy's; shorter when the pool, created at ``since``, is
    younger): the binds in ``buckets`` plus ``missed``, the claims of that span that got a handle made for them."""
    window = window or chosen.window
    horizon = now - window - chosen.bucket
    binds = sum(int(b.get("count") or 0) for b in buckets or [] if (_parse(b.get("start")) or horizon) > horizon)
    span = window if since is None else min(window, max(now - since, chosen.bucket))
    return (binds + missed) / span.total_seconds()


def base_stock(rate: float, time_to_ready: float, ratio: float) -> int:
    """The smallest *s* with ``P(Poisson(rate × time_to_ready) ≤ s − 1) ≥ ratio`` (see the module docstring)."""
    mean = rate * time_to_ready
    if mean <= 0:
        return 0 if rate <= 0 else 1
    term = math.exp(-mean) if mean < 700 else 0.0
    if term == 0.0:  # too large for the exact sum: the normal approximation with continuity correction
        return math.ceil(mean + _normal_quantile(ratio) * math.sqrt(mean) + 0.5)
    cumulative, k = term, 0
    while cumulative < ratio:
        k += 1
        term *= mean / k
        cumulative += term
    return k + 1


def _normal_quantile(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


@dataclass(frozen=True)
class Decision:
    desired: int  # what the model asks for now, within the bounds
    target: int  # what the pool keeps: desired, or the previous target while a scale-down waits for its delay
    lower_since: str | None  # since when desired has been below the target
    recheck_at: datetime | None  # when a delayed scale-down is due


def decide(rate: float, time_to_ready: float | None, chosen: Policy, previous: Mapping[str, Any] | None,
           now: datetime) -> Decision:
    """The target for now, applying the bounds and the scale-down delay."""
    model = base_stock(rate, time_to_ready, chosen.warm_hit_ratio) if time_to_ready is not None else 0
    desired = min(chosen.max_available, max(chosen.min_available, model))
    current = int((previous or {}).get("target") or chosen.min_available)
    current = min(chosen.max_available, max(chosen.min_available, current))
    if desired >= current:
        return Decision(desired, desired, None, None)
    since = _parse((previous or {}).get("lowerSince")) or now
    if now - since >= chosen.scale_down_delay:
        return Decision(desired, desired, None, None)
    return Decision(desired, current, timeutil.format_timestamp(since), since + chosen.scale_down_delay)


def explain(rate: float, time_to_ready: float | None, decision: Decision, chosen: Policy,
            expected: float | None = None) -> str:
    """The ``Autoscaled`` condition's message (absolute figures only, so a converged run writes nothing new);
    ``expected`` is the learned profile's forecast, named when it is what the pool sizes for."""
    per_hour = f"{rate * 3600:.1f}/h"
    window = timeutil.format_interval(chosen.window)
    forecast = ""
    if expected is not None and chosen.period is not None and expected > rate:
        forecast = (f", {expected * 3600:.1f}/h expected from the learned "
                    f"{timeutil.format_interval(chosen.period)} profile")
    if time_to_ready is None:
        measured = f"claim rate {per_hour} over {window}{forecast}; time to ready not measured yet"
    else:
        measured = (f"claim rate {per_hour} over {window}{forecast}, time to ready {round(time_to_ready)}s: "
                    f"{decision.desired} handles keep one ready for {chosen.warm_hit_ratio:.0%} of claims")
    bounds = f"(min {chosen.min_available}, max {chosen.max_available})"
    if decision.target > decision.desired:
        return (f"{measured} {bounds}; keeping {decision.target} until {decision.lower_since} + "
                f"{timeutil.format_interval(chosen.scale_down_delay)} (scaleDownDelay).")
    return f"{measured} {bounds}; target {decision.target}."


def _parse(value: Any) -> datetime | None:
    try:
        return timeutil.parse_timestamp(value) if value else None
    except (TypeError, ValueError):
        return None

"""A pool's learned demand over a recurring period (``spec.autoscaling.period``), pure: learn, forecast.

Why: the measured rate (:mod:`poolboy.domain.autoscaling`) sees a burst only once it has begun, so the claims of
its first time-to-ready T find the pool sized for the hour before. Demand that recurs — a class that starts at
nine every morning — can be seen coming: the pool remembers how many claims came in each part of the period and
makes handles a time to ready ahead of the part that is about to come.

The period (a day, a week) is cut into :data:`BUCKETS` buckets, numbered from the Unix epoch so that a day's
buckets start at midnight UTC. For each bucket the profile keeps an exponentially weighted mean of the demand
counted in it in past periods (binds of the pool plus the claims of its provider that got a handle made for them,
as the rate counts; the newest period weighs :data:`WEIGHT`). The forecast for now is the expected demand in
``[now, now + T]`` read off the profile, as a rate, so the pool's model sizes for it the way it sizes for the
measured rate (the pool takes the higher of the two). A bucket not yet seen once forecasts nothing: in its first
period the pool behaves as without a period.

The status keeps the bucket being counted and the binds seen in it so far. When a run finds the time has moved
into a later bucket, it closes the ones that ended: their demand is the binds counted plus the claims made for
them, read from the cache's index of such handles at each bucket boundary (:func:`boundaries`). Binds a run sees
are counted in the bucket it runs in, so a bind can slip into the next bucket by the delay of one pool run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from poolboy.utils import timeutil

#: buckets per period: 15 minutes of a day; the status holds one number per bucket
BUCKETS = 96
#: the weight of the newest period in a bucket's mean: about the last three periods count
WEIGHT = 0.3
#: the shortest period: a bucket of at least a second
MIN_PERIOD = timedelta(seconds=BUCKETS)


@dataclass(frozen=True)
class Profile:
    """``status.autoscaling.profile`` read: bucket numbers count bucket lengths since the Unix epoch."""

    period: timedelta
    since: int  # the first bucket counted: a bucket's mean exists once its slot was closed at or after it
    bucket: int  # the bucket being counted
    binds: int  # binds counted in it so far
    counts: tuple[float, ...]  # expected demand per slot of the period (bucket number modulo BUCKETS)

    @property
    def size(self) -> float:
        return bucket_seconds(self.period)


def parse_period(value: Any) -> timedelta:
    """``spec.autoscaling.period``; ``ValueError`` naming the field when it is wrong."""
    try:
        period = timeutil.parse_interval(str(value))
    except ValueError as error:
        raise ValueError(f"spec.autoscaling.period: {error}") from None
    if period < MIN_PERIOD:
        raise ValueError(f"spec.autoscaling.period: {value!r} must be at least {timeutil.format_interval(MIN_PERIOD)}")
    return period


def bucket_seconds(period: timedelta) -> float:
    return period.total_seconds() / BUCKETS


def bucket_of(moment: datetime, period: timedelta) -> int:
    return math.floor(moment.timestamp() / bucket_seconds(period))


def load(raw: Any, period: timedelta, now: datetime) -> Profile:
    """The profile the status recorded, or a new one starting now when there is none, it is malformed, or it was
    learned over another period."""
    try:
        if timeutil.parse_interval(raw["period"]) == period and len(raw["counts"]) == BUCKETS:
            return Profile(period, int(raw["since"]), int(raw["bucket"]), int(raw["binds"]),
                           tuple(float(c) for c in raw["counts"]))
    except (KeyError, TypeError, ValueError):
        pass
    current = bucket_of(now, period)
    return Profile(period, current, current, 0, (0.0,) * BUCKETS)


def boundaries(profile: Profile, now: datetime) -> list[datetime]:
    """The bucket boundaries at which the claims made for the closing buckets are read: the start of the bucket
    being counted, of each bucket after it, and of now's; none while now is in the bucket being counted."""
    first, current = _closing(profile, now)
    if first >= current:
        return []
    return [_start(number, profile.size) for number in range(first, current + 1)]


def advance(profile: Profile, now: datetime, binds: int, made_since: Sequence[int]) -> Profile:
    """The profile after this run: the buckets that ended closed into the means, ``binds`` (seen by this run)
    counted in now's bucket. ``made_since[i]`` is how many claims got a handle made for them since
    ``boundaries(profile, now)[i]``."""
    first, current = _closing(profile, now)
    if first >= current:
        return Profile(profile.period, profile.since, profile.bucket, profile.binds + binds, profile.counts)
    counts = list(profile.counts)
    for offset, number in enumerate(range(first, current)):
        demand = max(0, made_since[offset] - made_since[offset + 1]) if len(made_since) > offset + 1 else 0
        if number == profile.bucket:
            demand += profile.binds
        slot = number % BUCKETS
        counts[slot] = float(demand) if number - BUCKETS < profile.since else \
            (1 - WEIGHT) * counts[slot] + WEIGHT * demand
    return Profile(profile.period, profile.since, current, binds, tuple(counts))


def forecast(profile: Profile, now: datetime, horizon: timedelta) -> float:
    """Claims per second expected over ``[now, now + horizon]`` from the buckets already learned."""
    seconds = horizon.total_seconds()
    if seconds <= 0:
        return 0.0
    start, end, size = now.timestamp(), now.timestamp() + seconds, profile.size
    expected = 0.0
    for number in range(math.floor(start / size), math.floor(end / size) + 1):
        overlap = min(end, (number + 1) * size) - max(start, number * size)
        if overlap > 0 and number - BUCKETS >= profile.since and number - BUCKETS < profile.bucket:
            expected += profile.counts[number % BUCKETS] * overlap / size
    return expected / seconds


def next_change(profile: Profile, now: datetime, horizon: timedelta) -> datetime:
    """When the forecast next changes: the window ``[now, now + horizon]`` enters or leaves a bucket."""
    size, start = profile.size, now.timestamp()
    entering = (math.floor((start + horizon.total_seconds()) / size) + 1) * size - horizon.total_seconds()
    leaving = (math.floor(start / size) + 1) * size
    return datetime.fromtimestamp(min(entering, leaving), tz=UTC)


def dump(profile: Profile) -> dict[str, Any]:
    """``status.autoscaling.profile``: means rounded, so that a run that closes nothing writes nothing new."""
    return {"period": timeutil.format_interval(profile.period), "since": profile.since, "bucket": profile.bucket,
            "binds": profile.binds, "counts": [round(c, 3) for c in profile.counts]}


def _closing(profile: Profile, now: datetime) -> tuple[int, int]:
    """``(first bucket to close, now's bucket)``: at most one period is closed, older buckets are overwritten by
    the same slots anyway."""
    current = bucket_of(now, profile.period)
    return max(profile.bucket, current - BUCKETS), current


def _start(number: int, size: float) -> datetime:
    return datetime.fromtimestamp(number * size, tz=UTC)

"""The learned demand profile (``spec.autoscaling.period``), pure: counting per bucket, learning over
periods, forecasting a recurring burst a time to ready ahead."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from poolboy.domain import autoscaling
from poolboy.domain import demand_profile as dp

DAY = timedelta(hours=24)
BUCKET = DAY / dp.BUCKETS  # 15 minutes
MIDNIGHT = datetime(2030, 1, 1, tzinfo=UTC)
NINE = MIDNIGHT + timedelta(hours=9)


def run_day(profile: dp.Profile, day: int, claims_at: dict[timedelta, int], step: timedelta = BUCKET / 3) -> dp.Profile:
    """A pool that runs every ``step`` through one day, seeing ``claims_at[offset]`` binds at each offset (no
    claims made for missed demand: every bind comes from the pool)."""
    start = MIDNIGHT + day * DAY
    offset = timedelta(0)
    while offset < DAY:
        now = start + offset
        closing = dp.boundaries(profile, now)
        profile = dp.advance(profile, now, claims_at.get(offset, 0), [0] * len(closing))
        offset += step
    return profile


def test_the_period_is_validated_with_the_field_named() -> None:
    assert dp.parse_period("24h") == DAY
    with pytest.raises(ValueError, match=r"spec\.autoscaling\.period"):
        dp.parse_period("daily")
    with pytest.raises(ValueError, match="at least"):
        dp.parse_period("30s")
    policy = autoscaling.policy({"autoscaling": {"maxAvailable": 5, "period": "7d"}})
    assert policy is not None and policy.period == timedelta(days=7)
    assert autoscaling.policy({"autoscaling": {"maxAvailable": 5}}).period is None  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="period"):
        autoscaling.policy({"autoscaling": {"maxAvailable": 5, "period": "1m"}})


def test_the_first_period_forecasts_nothing_and_the_next_one_expects_the_recurring_burst() -> None:
    burst = {timedelta(hours=9) + BUCKET / 3 * k: 4 for k in range(3)}  # 12 claims between 9:00 and 9:15
    profile = dp.load(None, DAY, MIDNIGHT)
    assert dp.forecast(profile, NINE - timedelta(minutes=10), timedelta(minutes=20)) == 0.0
    profile = run_day(profile, 0, burst)
    # before the second day's burst: 10 minutes of the 20 ahead overlap the 9:00 bucket, which held 12 claims
    expected = dp.forecast(profile, NINE + DAY - timedelta(minutes=10), timedelta(minutes=20))
    assert expected == pytest.approx(12 * 10 / 15 / (20 * 60))
    # a quiet part of the day expects nothing
    assert dp.forecast(profile, MIDNIGHT + DAY + timedelta(hours=3), timedelta(minutes=20)) == 0.0


def test_buckets_learn_a_weighted_mean_over_periods() -> None:
    profile = dp.load(None, DAY, MIDNIGHT)
    profile = run_day(profile, 0, {timedelta(hours=9): 10})
    profile = run_day(profile, 1, {timedelta(hours=9): 0})
    slot = dp.bucket_of(NINE, DAY) % dp.BUCKETS
    assert profile.counts[slot] == pytest.approx(10 * (1 - dp.WEIGHT))
    profile = run_day(profile, 2, {timedelta(hours=9): 20})
    assert profile.counts[slot] == pytest.approx(10 * (1 - dp.WEIGHT) ** 2 + 20 * dp.WEIGHT)


def test_claims_made_for_missed_demand_count_in_the_bucket_they_were_made_in() -> None:
    profile = dp.load(None, DAY, NINE + timedelta(minutes=1))
    profile = dp.advance(profile, NINE + timedelta(minutes=1), 2, [])  # two binds seen in the 9:00 bucket
    later = NINE + 2 * BUCKET + timedelta(minutes=1)  # the pool's next run: two buckets have ended
    closing = dp.boundaries(profile, later)
    assert closing == [NINE, NINE + BUCKET, NINE + 2 * BUCKET]
    # made since each boundary: 5 since 9:00, 1 since 9:15, 0 since 9:30 → 4 in the first bucket, 1 in the second
    profile = dp.advance(profile, later, 1, [5, 1, 0])
    first = dp.bucket_of(NINE, DAY)
    assert profile.counts[first % dp.BUCKETS] == 6.0 and profile.counts[(first + 1) % dp.BUCKETS] == 1.0
    assert (profile.bucket, profile.binds) == (first + 2, 1)


def test_the_status_round_trips_and_a_new_period_or_a_malformed_record_starts_over() -> None:
    profile = run_day(dp.load(None, DAY, MIDNIGHT), 0, {timedelta(hours=9): 3})
    raw = dp.dump(profile)
    assert raw["period"] == "1d" and len(raw["counts"]) == dp.BUCKETS
    assert dp.load(raw, DAY, MIDNIGHT + DAY) == profile
    restarted = dp.load(raw, timedelta(days=7), MIDNIGHT + DAY)
    assert restarted.counts == (0.0,) * dp.BUCKETS and restarted.since == dp.bucket_of(MIDNIGHT + DAY, restarted.period)
    assert dp.load({"period": "1d", "counts": "x"}, DAY, MIDNIGHT).counts == (0.0,) * dp.BUCKETS


def test_a_pool_that_did_not_run_for_longer_than_a_period_closes_one_period_at_most() -> None:
    profile = dp.load(None, DAY, MIDNIGHT)
    much_later = MIDNIGHT + 3 * DAY + timedelta(minutes=1)
    closing = dp.boundaries(profile, much_later)
    assert len(closing) == dp.BUCKETS + 1
    profile = dp.advance(profile, much_later, 0, [0] * len(closing))
    assert profile.bucket == dp.bucket_of(much_later, DAY)


def test_the_forecast_changes_when_its_window_enters_or_leaves_a_bucket() -> None:
    profile = dp.load(None, DAY, MIDNIGHT)
    now = NINE + timedelta(minutes=2)
    # the window [9:02, 9:22] leaves the 9:00 bucket at 9:15 and enters the 9:30 bucket at 9:30 - 20 min = 9:10
    assert dp.next_change(profile, now, timedelta(minutes=20)) == NINE + timedelta(minutes=10)
    assert dp.next_change(profile, now, timedelta(minutes=5)) == NINE + timedelta(minutes=10)

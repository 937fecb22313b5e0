"""Demand-driven pool sizes, pure (``spec.autoscaling``): the policy, the measurements, the model."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from poolboy.domain import autoscaling as a

NOW = datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)
POLICY = a.Policy(min_available=1, max_available=10, window=timedelta(minutes=30),
                  scale_down_delay=timedelta(minutes=10), warm_hit_ratio=0.95)


def poisson_cdf(k: int, mean: float) -> float:
    return sum(math.exp(-mean + i * math.log(mean) - math.lgamma(i + 1)) for i in range(k + 1))


def test_policy_defaults_and_errors() -> None:
    assert a.policy({}) is None
    assert a.policy({"minAvailable": 1, "autoscaling": {"maxAvailable": 10}}) == POLICY
    with pytest.raises(ValueError, match="maxAvailable"):
        a.policy({"minAvailable": 3, "autoscaling": {"maxAvailable": 2}})
    with pytest.raises(ValueError, match=r"spec\.autoscaling\.window"):
        a.policy({"autoscaling": {"maxAvailable": 2, "window": "soon"}})
    with pytest.raises(ValueError, match="warmHitRatio"):
        a.policy({"autoscaling": {"maxAvailable": 2, "warmHitRatio": 1.5}})


@pytest.mark.parametrize(("rate", "ttr", "ratio"), [(0.01, 120, 0.95), (0.5, 60, 0.95), (2.0, 150, 0.99),
                                                    (0.001, 30, 0.9)])
def test_base_stock_is_the_smallest_stock_that_reaches_the_ratio(rate: float, ttr: float, ratio: float) -> None:
    s = a.base_stock(rate, ttr, ratio)
    assert poisson_cdf(s - 1, rate * ttr) >= ratio
    assert s == 1 or poisson_cdf(s - 2, rate * ttr) < ratio


def test_base_stock_edges_and_large_means() -> None:
    assert a.base_stock(0, 60, 0.95) == 0
    assert a.base_stock(1, 0, 0.95) == 1
    big = a.base_stock(10, 100, 0.95)  # mean 1000: the normal approximation
    assert 1040 <= big <= 1060


def test_binds_are_bucketed_and_age_out_of_the_window() -> None:
    buckets = a.record_binds(None, 3, NOW, POLICY)
    assert buckets == [{"start": "2030-01-01T12:00:00Z", "count": 3}]
    buckets = a.record_binds(buckets, 2, NOW + timedelta(seconds=20), POLICY)
    assert buckets == [{"start": "2030-01-01T12:00:00Z", "count": 5}]
    assert a.claim_rate(buckets, NOW, POLICY, None) == 5 / 1800
    assert a.claim_rate(buckets, NOW, POLICY, NOW - timedelta(minutes=5)) == 5 / 300, "a young pool"
    later = NOW + timedelta(minutes=40)
    assert a.record_binds(buckets, 0, later, POLICY) == []
    assert a.claim_rate(buckets, later, POLICY, None) == 0
    many = None
    for minute in range(100):
        many = a.record_binds(many, 1, NOW + timedelta(minutes=minute), POLICY)
    assert len(many) <= a.MAX_BUCKETS + 1


def test_decide_scales_up_at_once_and_down_after_the_delay() -> None:
    up = a.decide(0.05, 120, POLICY, {"target": 1}, NOW)  # mean 6: 11 for 95 %, capped at 10
    assert (up.desired, up.target, up.lower_since) == (10, 10, None)
    down = a.decide(0.0, 120, POLICY, {"target": 10}, NOW)
    assert (down.desired, down.target, down.lower_since) == (1, 10, "2030-01-01T12:00:30Z")
    assert down.recheck_at == NOW + timedelta(minutes=10)
    still = a.decide(0.0, 120, POLICY, {"target": 10, "lowerSince": down.lower_since}, NOW + timedelta(minutes=9))
    assert still.target == 10
    done = a.decide(0.0, 120, POLICY, {"target": 10, "lowerSince": down.lower_since}, NOW + timedelta(minutes=10))
    assert (done.target, done.lower_since) == (1, None)
    assert a.decide(1.0, None, POLICY, None, NOW).target == 1, "no time to ready measured: the floor"


def test_explanation_names_the_figures() -> None:
    decision = a.decide(0.05, 120, POLICY, {"target": 1}, NOW)
    message = a.explain(0.05, 120, decision, POLICY)
    assert message.startswith("claim rate 180.0/h over 30m, time to ready 120s: 10 handles keep one ready for 95% "
                              "of claims (min 1, max 10); target 10.")


def test_missed_claims_count_as_demand_and_a_burst_shows_in_the_short_window() -> None:
    created = NOW - timedelta(hours=2)
    # 6 claims in the last five minutes: 3 bound pool handles, 3 found the pool empty and got their own handle
    buckets = a.record_binds(None, 3, NOW - timedelta(minutes=1), POLICY)
    served = a.claim_rate(buckets, NOW, POLICY, created)
    assert served == pytest.approx(3 / 1800)
    assert a.claim_rate(buckets, NOW, POLICY, created, missed=3) == pytest.approx(6 / 1800)
    short = a.short_window(POLICY)
    assert short == timedelta(minutes=5)
    burst = a.claim_rate(buckets, NOW, POLICY, created, missed=3, window=short)
    assert burst > 5 * a.claim_rate(buckets, NOW, POLICY, created, missed=3), "the burst is visible at once"


def test_an_empty_pool_measures_the_demand_it_missed() -> None:
    """Nothing bound from the pool (it had no handle) but claims came: the target rises above the floor."""
    rate = a.claim_rate([], NOW, POLICY, NOW - timedelta(hours=1), missed=12, window=a.short_window(POLICY))
    assert a.decide(rate, 120, POLICY, {"target": 1}, NOW).target > 1
    assert a.decide(a.claim_rate([], NOW, POLICY, None), 120, POLICY, {"target": 1}, NOW).target == 1

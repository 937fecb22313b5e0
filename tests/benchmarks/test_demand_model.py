"""The demand model (``benchmarks/demand_model.py``): the pool mechanics a user of the figures relies on."""

from __future__ import annotations

from datetime import timedelta

from benchmarks import demand_model
from poolboy.domain import autoscaling

SECONDS = 150.0
TRACE = [5.0 + 4.0 * i for i in range(30)]  # one claim every 4 s


def static(size: int) -> demand_model.Pool:
    return demand_model.replay(TRACE, SECONDS, lambda *_: size, size, ready_s=9.0, recheck_s=3.0)


def test_an_empty_pool_serves_no_claim_warm_and_holds_no_idle_handle() -> None:
    pool = static(0)
    figures = demand_model.figures("static 0", pool, warm_s=2.0)
    assert figures["warm_hit_ratio"] == 0.0 and figures["idle_handle_seconds"] == 0
    assert pool.waits == [9.0] * len(TRACE)


def test_a_pool_that_outlasts_the_replacement_time_serves_every_claim_warm() -> None:
    # a claim every 4 s, replacements ready after 9 s: 3 handles are enough, 4 leave one spare
    assert demand_model.figures("static 4", static(4), warm_s=2.0)["warm_hit_ratio"] == 1.0
    assert demand_model.figures("static 1", static(1), warm_s=2.0)["warm_hit_ratio"] < 0.5


def test_a_static_pool_is_refilled_to_its_size_after_every_claim() -> None:
    pool = static(5)
    assert pool.unbound and set(pool.unbound) == {5}
    assert demand_model.figures("static 5", pool, warm_s=2.0)["idle_handle_seconds"] == 5 * len(pool.unbound)


def test_an_autoscaled_pool_stays_within_its_bounds_and_follows_demand() -> None:
    policy = autoscaling.Policy(1, 6, timedelta(seconds=30), timedelta(seconds=10), 0.95)
    pool = demand_model.replay(TRACE, 200.0, demand_model.autoscaled(policy, 9.0), 1, ready_s=9.0, recheck_s=3.0)
    assert min(pool.unbound) >= 1 and max(pool.unbound) <= 6
    assert max(pool.unbound) > 1  # a claim every 4 s raises the target above the floor
    # the last claim comes at 121 s: the target holds for a while (delay, window), then falls back to the floor
    assert pool.unbound[130] > 1 and pool.unbound[-1] == 1

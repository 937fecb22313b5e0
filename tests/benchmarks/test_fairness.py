"""The fairness benchmark's measures (benchmarks/fairness.py): Jain's index, max-min fair shares, the day's trace
and the ledger's handle-seconds against fair shares."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.fairness import HEAVY, Ledger, day, fair_shares, jain_index, wait_figures


def test_jain_index_is_one_when_equal_and_one_over_n_when_one_holds_all() -> None:
    assert jain_index([2.0, 2.0, 2.0]) == 1.0
    assert jain_index([3.0, 0.0, 0.0]) == pytest.approx(1 / 3)


def test_fair_shares_meet_small_demands_and_split_the_rest_evenly() -> None:
    assert fair_shares(10, {"heavy": 30, "a": 1, "b": 2}) == {"a": 1, "b": 2, "heavy": 7}
    assert fair_shares(6, {"x": 5, "y": 5}) == {"x": 3, "y": 3}
    assert fair_shares(4, {"x": 1}) == {"x": 1}


def test_the_day_has_the_heavy_bursts_and_the_light_claims_in_arrival_order() -> None:
    args = argparse.Namespace(seed=1, seconds=100.0, heavy_bursts=2, heavy_burst=5, light=3, light_claims=2)
    arrivals = day(args)
    assert sum(a.namespace == HEAVY for a in arrivals) == 10 and len(arrivals) == 16
    assert [a.at for a in arrivals] == sorted(a.at for a in arrivals)
    assert day(args) == arrivals, "seeded: every policy sees the same day"


def test_the_ledger_counts_only_while_a_claim_waits() -> None:
    ledger = Ledger()
    ledger.created.update({("heavy", "h1"): 0.0, ("heavy", "h2"): 0.0, ("light", "l1"): 0.0})
    ledger.bound.update({("heavy", "h1"): 1.0, ("heavy", "h2"): 1.0})
    ledger.sample(1.0)  # heavy holds 2, light waits for 1: the fair split of 2 handles is 1 and 1
    assert (ledger.held, ledger.fair) == ({"heavy": 2.0, "light": 0.0}, {"heavy": 1.0, "light": 1.0})
    ledger.bound[("light", "l1")] = 2.0
    ledger.sample(1.0)  # nobody waits: no contention, nothing counted
    assert ledger.fair == {"heavy": 1.0, "light": 1.0}


def test_wait_figures_are_nearest_rank() -> None:
    assert wait_figures([float(v) for v in range(1, 21)]) == {"p50": 10.0, "p95": 19.0, "max": 20.0}
    assert wait_figures([]) == {"p50": None, "p95": None, "max": None}


def test_wait_figures_take_the_quantiles_asked_for() -> None:
    figures = wait_figures([float(v) for v in range(1, 101)], (0.5, 0.99))
    assert figures == {"p50": 50.0, "p99": 99.0, "max": 100.0}

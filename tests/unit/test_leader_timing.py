"""The watcher election's periods keep its two promises: takeover within the configured seconds of the leader's
death, and a leader that cannot renew stepping down before a standby may take over."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from watcher.leader import LeaseTiming


def test_default_fifteen_seconds() -> None:
    timing = LeaseTiming.for_takeover_within(15)
    assert timing.retry_period == pytest.approx(1.5)
    assert timing.lease_duration == 10
    assert timing.renew_deadline == pytest.approx(20 / 3)


@given(st.floats(min_value=3, max_value=3600))
def test_takeover_bound_leaves_room_for_requests(seconds: float) -> None:
    timing = LeaseTiming.for_takeover_within(seconds)
    # one poll to see the last renewal, the lease itself, one poll to notice the expiry: 90% of the promise at most
    assert timing.lease_duration + 2 * timing.retry_period <= 0.9 * seconds + 1e-6
    assert isinstance(timing.lease_duration, int) and timing.lease_duration >= 1


@given(st.floats(min_value=0, max_value=3600))
def test_leader_steps_down_before_the_lease_can_be_taken(seconds: float) -> None:
    timing = LeaseTiming.for_takeover_within(seconds)
    assert timing.renew_deadline < timing.lease_duration
    assert timing.retry_period < timing.renew_deadline

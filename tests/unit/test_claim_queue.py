"""A waiting claim's place in its queue, pure: words, expected wait, bounded rewrites."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from poolboy.domain.binding import queue as q

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
POOL = {"spec": {"minAvailable": 4, "maxUnready": 2}, "status": {"timeToReadySeconds": 120}}


def test_what_a_scope_waits_for() -> None:
    assert q.waiting_for("pool=labs") == "ResourcePool labs"
    assert q.waiting_for("provider=lab") == "ResourceProvider lab"


def test_expected_wait_from_the_serving_pools() -> None:
    assert q.expected_wait(1, [POOL]) == (timedelta(minutes=2), timedelta(minutes=2))
    assert q.expected_wait(5, [POOL]) == (timedelta(minutes=6), timedelta(minutes=2)), "2 at a time (maxUnready)"
    assert q.expected_wait(5, [POOL, {"spec": {"minAvailable": 3}}])[0] == timedelta(minutes=2)
    assert q.expected_wait(1, [{"spec": {"minAvailable": 0}, "status": {"timeToReadySeconds": 5}}]) is None
    assert q.expected_wait(1, [{"spec": {"minAvailable": 2}}]) is None, "not measured"
    assert q.expected_wait(1, []) is None


def test_message_from_the_record() -> None:
    record = q.record(q.place("pool=labs", 3, 12, [POOL]), NOW)
    assert record == {"waitingFor": "ResourcePool labs", "position": 3, "waiting": 12, "expectedWait": "4m",
                      "timeToReady": "2m", "updated": "2030-01-01T12:00:00Z"}
    assert q.message(record) == ("Waiting for a ResourceHandle of ResourcePool labs: position 3 of 12, expected "
                                 "wait about 4m (pool handles take about 2m to become ready). Handle creation is "
                                 "disabled.")
    bare = q.record(q.place("provider=lab", 1, 1, []), NOW)
    assert q.message(bare) == "Waiting for a ResourceHandle of ResourceProvider lab: position 1 of 1. Handle " \
                              "creation is disabled."


def test_rewrites_only_on_a_new_position_and_at_most_once_per_interval() -> None:
    interval = timedelta(seconds=30)
    first = q.place("pool=labs", 5, 9, [])
    assert q.refresh(None, first, NOW, interval) == (True, None)
    written = q.record(first, NOW)
    assert q.refresh(written, q.place("pool=labs", 5, 20, []), NOW + timedelta(hours=1), interval) == (False, None)
    moved = q.place("pool=labs", 4, 9, [])
    assert q.refresh(written, moved, NOW + timedelta(seconds=10), interval) == (False, NOW + interval)
    assert q.refresh(written, moved, NOW + interval, interval) == (True, None)

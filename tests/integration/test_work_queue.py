"""The work queue's Lua scripts and its delaying queue against a real redis-server (fast: no workers)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from redisscripts.combined import MAX_COMBINED
from tests.waiting import wait_for
from workqueue import keyspace, ratelimit
from workqueue.clock import FakeClock
from workqueue.delaying import DelayingQueue
from workqueue.lease import LeaseKeeper, Renewer
from workqueue.queue import WorkQueue
from workqueue.roundtrip import RoundTrip

pending_key, active_key = keyspace.pending, keyspace.active

KEY = "claim/ns/a"


@pytest.fixture()
def r(bytes_client: redis.Redis) -> redis.Redis:
    """This file's client answers bytes, as the workers' clients do (the shared ``r`` decodes)."""
    return bytes_client


@pytest.fixture()
def work_queue(r) -> WorkQueue:
    return WorkQueue(r, lease_seconds=0.3, pending_ttl=60, stale_seconds=1)


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def timed_queue(r, clock) -> WorkQueue:
    """:func:`work_queue` keeping time by :func:`clock`, which only the test moves."""
    return WorkQueue(r, lease_seconds=0.3, pending_ttl=60, stale_seconds=1, clock=clock)


def test_burst_publishes_once(work_queue):
    outcomes = [work_queue.add(KEY).outcome for _ in range(100)]
    assert outcomes.count("published") == 1 and outcomes.count("coalesced") == 99


def test_start_clears_pending_and_event_during_run_republishes_once(work_queue):
    publish = work_queue.add(KEY).publish
    assert work_queue.start(KEY, "t1") is not None
    assert [work_queue.add(KEY).outcome for _ in range(5)] == ["pending-while-running"] + ["coalesced"] * 4
    rerun = work_queue.done(KEY, "t1")
    assert rerun is not None and rerun.msg_id != publish.msg_id
    assert work_queue.add(KEY).outcome == "coalesced"  # the re-run's message is queued
    assert work_queue.start(KEY, "t2") is not None
    assert work_queue.done(KEY, "t2") is None


def test_busy_start_marks_pending_for_the_holder(work_queue, r):
    assert work_queue.start(KEY, "t1") is not None
    assert work_queue.start(KEY, "t2") is None  # a duplicate message while running: no concurrent run
    assert r.exists(pending_key(KEY))
    assert work_queue.done(KEY, "t1") is not None  # ...folded into exactly one re-run


def test_stale_token_cannot_release_or_renew_new_holders_lease(work_queue, r):
    assert work_queue.start(KEY, "old") is not None
    r.delete(active_key(KEY))  # the old lease lapsed
    assert work_queue.start(KEY, "new") is not None
    assert not work_queue.renew(KEY, "old")
    assert work_queue.done(KEY, "old") is None
    assert r.get(active_key(KEY)) == b"new"
    assert work_queue.renew(KEY, "new")


def test_event_outranks_queued_resync(work_queue):
    assert work_queue.add(KEY, "resync").outcome == "published"
    assert work_queue.add(KEY, "resync").outcome == "coalesced"
    added = work_queue.add(KEY, "event")
    assert added.outcome == "published" and added.publish.priority == 0
    assert work_queue.add(KEY, "event").outcome == "coalesced"


def test_event_during_run_upgrades_the_rerun_priority(work_queue):
    work_queue.start(KEY, "t1")
    work_queue.add(KEY, "resync")
    work_queue.add(KEY, "event")
    assert work_queue.done(KEY, "t1").priority == 0


def test_stale_pending_is_rearmed(work_queue, r):
    work_queue.add(KEY)
    r.set(pending_key(KEY), "lost|1000|0|1")  # a queued mark from long ago whose message never arrived
    assert work_queue.add(KEY).outcome == "published"


def _calls(r: redis.Redis) -> dict[str, int]:
    return {name: int(stats["calls"]) for name, stats in r.info("commandstats").items()}


def test_add_and_start_keep_time_by_the_callers_clock_without_asking_redis(r):
    """A watch event's ADD and a run's START are the work queue's most frequent steps: they stamp marks and lease
    deadlines with the caller's clock instead of one more ``TIME`` command each."""
    clock = FakeClock(now=1_000.0)
    work_queue = WorkQueue(r, lease_seconds=0.3, pending_ttl=60, stale_seconds=1, clock=clock)
    work_queue.add("claim/ns/warm")
    work_queue.start("claim/ns/warm", "warm")  # the scripts are loaded from now on
    before = _calls(r)
    work_queue.add(KEY)
    assert r.get(pending_key(KEY)).decode().split("|")[1] == "1000000"
    clock.advance(0.25)
    started = work_queue.start(KEY, "t1")
    assert started is not None and started.waited == pytest.approx(0.25)
    assert r.zscore(keyspace.LEASES, KEY) == 1_000_250 + work_queue.lease_ms
    assert _calls(r).get("cmdstat_time", 0) == before.get("cmdstat_time", 0)


def test_reap_republishes_a_dead_holders_key_once(work_queue):
    work_queue.start(KEY, "dead")
    assert work_queue.reap() == []
    reaped = wait_for(work_queue.reap, 3, message="the dead lease to expire and be reaped")
    assert [p.key for p in reaped] == [KEY]
    assert work_queue.reap() == []
    assert work_queue.add(KEY).outcome == "coalesced"  # the reaped message is queued
    assert work_queue.start(KEY, "next") is not None


def test_lease_keeper_keeps_the_lease_and_reports_loss(work_queue, r):
    work_queue.start(KEY, "t1")
    with LeaseKeeper(Renewer(work_queue), KEY, "t1") as keeper:
        end = time.monotonic() + 1.0  # over three lease lengths: only renewals keep it alive
        while time.monotonic() < end:
            assert r.get(active_key(KEY)) == b"t1"
            time.sleep(0.02)
        r.set(active_key(KEY), "thief")
        assert keeper.lost.wait(1.0)
    assert not r.get(active_key(KEY)) or r.get(active_key(KEY)) == b"thief"


def test_lease_of_a_run_past_its_time_limit_lapses_for_the_reaper(work_queue, r):
    """The threads pool cannot kill a stuck run: past its hard time limit, its lease is no longer renewed, so the
    key goes back to the queue (the reaper re-publishes it) while the stuck run holds only its thread."""
    work_queue.start(KEY, "t1")
    with LeaseKeeper(Renewer(work_queue), KEY, "t1", time_limit=0.5) as keeper:
        # watched from the keeper's own start, so that a slow test thread never reads the limit's end as early
        while True:
            lost, held = keeper.lost.is_set(), r.get(active_key(KEY))
            if (elapsed := time.monotonic() - keeper.started) >= 0.4:
                break
            assert not lost, f"lease given up within {elapsed:.2f}s, before the 0.5s limit"
            assert held == b"t1", "renewed within the limit"
            time.sleep(0.02)
        assert keeper.lost.wait(3.0), "past the limit the keeper gives the lease up"
        wait_for(lambda: r.get(active_key(KEY)) is None, 2, message="the lease to expire")
    assert [p.key for p in wait_for(work_queue.reap, 3, message="the reaper to hand the key on")] == [KEY]


@dataclass
class RoundTrips:
    """How many requests a client sent: each send of packed commands is one round trip (a pipeline is one)."""

    count: int = 0


@pytest.fixture()
def counted(r, redis_server) -> Iterator[tuple[redis.Redis, RoundTrips]]:
    """A client on the emptied redis-server whose connections count the round trips they make."""
    trips = RoundTrips()

    class CountingConnection(redis.Connection):
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            trips.count += 1
            super().send_packed_command(command, check_health)

    pool = redis.ConnectionPool.from_url(redis_server.url, connection_class=CountingConnection)
    yield redis.Redis(connection_pool=pool), trips
    pool.disconnect()


def test_add_many_is_one_round_trip(counted):
    """More keys than one combined script runs, with scripts this client never loaded: still one request."""
    client, trips = counted
    work_queue = WorkQueue(client)
    client.ping()  # the connection's handshake is not part of what is counted
    keys = ["claim/a/1", "claim/a/1", "pool/p/x", *(f"claim/b/{i}" for i in range(MAX_COMBINED))]
    before = trips.count
    results = work_queue.add_many(keys, "resync")
    assert trips.count - before == 1
    assert [added.outcome for added in results[:3]] == ["published", "coalesced", "published"]
    assert all(added.publish.priority == 9 for added in results if added.publish)


def test_delaying_queue_keeps_the_earliest_time_and_releases_what_is_due(work_queue, r):
    delaying = DelayingQueue(work_queue)
    for at in (200, 100, 300):
        delaying.add_after("claim/a/b", at)
    delaying.add_after("claim/a/c", time.time() + 3600)
    assert delaying.deadline("claim/a/b") == 100 and delaying.size() == 2 and delaying.oldest() == 100
    assert [added.publish.key for added in delaying.release_due(limit=10)] == ["claim/a/b"]
    assert delaying.release_due(limit=10) == [] and delaying.size() == 1


def test_a_due_key_stays_until_its_add_is_made(work_queue, r, monkeypatch):
    """A release that fails before its ADD (Redis away, the worker killed) forgets nothing: the key is still due."""
    delaying = DelayingQueue(work_queue)
    delaying.add_after(KEY, 100)

    def unreachable(*args, **kwargs):
        raise redis.ConnectionError("Redis away")

    monkeypatch.setattr(work_queue, "add_many", unreachable)
    with pytest.raises(redis.ConnectionError):
        delaying.release_due()
    monkeypatch.undo()
    assert delaying.deadline(KEY) == 100
    assert [added.outcome for added in delaying.release_due()] == ["published"]


def test_a_held_key_runs_once_when_its_window_ends(timed_queue, clock, r):
    """Adds during a window coalesce into the one run its end releases."""
    delaying = DelayingQueue(timed_queue)
    trip = RoundTrip(r)
    held = trip.call(delaying.hold_call(KEY, 0.2))
    trip.send()
    assert held.value is True
    assert [timed_queue.add(KEY).outcome for _ in range(3)] == ["coalesced"] * 3, "adds join the window"
    clock.advance(0.19)
    assert delaying.release_due() == [], "nothing is released before the window ends"
    clock.advance(0.01)
    assert [added.outcome for added in delaying.release_due()] == ["published"]
    assert timed_queue.add(KEY).outcome == "coalesced", "the released run is queued"


def test_a_key_held_while_it_runs_is_released_by_the_window_not_by_done(timed_queue, clock, r):
    delaying = DelayingQueue(timed_queue)
    assert timed_queue.start(KEY, "t1") is not None
    trip = RoundTrip(r)
    trip.call(delaying.hold_call(KEY, 0.1))
    trip.send()
    assert timed_queue.done(KEY, "t1") is None, "the window's end publishes the run, not DONE"
    assert delaying.release_due() == []
    clock.advance(0.1)
    assert [added.outcome for added in delaying.release_due()] == ["published"]


def test_a_window_that_ends_while_the_key_runs_is_owed_by_that_run(timed_queue, clock, r):
    """A run longer than the window: its end finds the key running, so that run's DONE publishes the held run (the
    window is over; nothing else would release it, and later adds would coalesce into the orphaned mark)."""
    delaying = DelayingQueue(timed_queue)
    assert timed_queue.start(KEY, "t1") is not None
    trip = RoundTrip(r)
    trip.call(delaying.hold_call(KEY, 0.1))
    trip.send()
    clock.advance(0.1)
    assert [added.outcome for added in delaying.release_due()] == ["pending-while-running"]
    assert delaying.size() == 0
    rerun = timed_queue.done(KEY, "t1")
    assert rerun is not None, "the run the window held is published when the run that outlived it ends"
    assert timed_queue.add(KEY).outcome == "coalesced", "the published run is queued"


def test_a_deadline_is_released_when_the_clock_reaches_it_and_not_before(timed_queue, clock):
    delaying = DelayingQueue(timed_queue)
    delaying.add_after(KEY, clock.now() + 3600)
    clock.advance(3599.9)
    assert delaying.release_due() == [] and delaying.size() == 1
    clock.advance(0.1)
    assert [added.publish.key for added in delaying.release_due()] == [KEY]
    assert delaying.size() == 0


def test_a_run_past_its_time_limit_loses_its_lease_when_the_clock_says_so(r, clock):
    """The limit is read on the queue's clock: an hour's limit passes when the test moves the clock an hour on (the
    renewer still sleeps for real between its rounds: a second, a third of this lease)."""
    queue = WorkQueue(r, lease_seconds=3, clock=clock)
    assert queue.start(KEY, "t1") is not None
    with LeaseKeeper(Renewer(queue), KEY, "t1", time_limit=3600) as keeper:
        clock.advance(3599)
        assert not keeper.lost.wait(1.5), "within the limit the lease is kept"
        clock.advance(2)
        assert keeper.lost.wait(3.0), "past the limit the keeper gives the lease up"


def test_the_rate_limiter_counts_failures_until_forgotten(r):
    limiter = ratelimit.RateLimiter(r)
    for _ in range(2):
        limiter.when(KEY)
    assert limiter.num_requeues(KEY) == 2 and limiter.num_requeues("claim/ns/other") == 0
    limiter.forget(KEY)
    assert limiter.num_requeues(KEY) == 0
    limiter.when(KEY)
    assert limiter.num_requeues(KEY) == 1, "after a success the next failure starts from the bottom"
    trip = RoundTrip(r)
    limiter.forget(KEY, trip)
    assert limiter.num_requeues(KEY) == 1, "forgotten when the round trip goes"
    trip.send()
    assert limiter.num_requeues(KEY) == 0


def test_the_rate_limiters_backoff_grows_to_its_cap(r):
    limiter = ratelimit.RateLimiter(r, max_delay=300.0, fault_max_delay=5.0)
    delays = [limiter.when(KEY) for _ in range(30)]
    assert all(ratelimit.FLOOR <= d <= min(300.0, 2.0 ** n) for n, d in enumerate(delays)), delays
    assert max(delays[20:]) > 5.0, "jittered over the whole range up to the cap"


def test_a_passing_fault_backs_off_within_its_own_cap_but_honours_retry_after(r):
    limiter = ratelimit.RateLimiter(r, max_delay=300.0, fault_max_delay=5.0)
    assert all(limiter.when(KEY, fault=True) <= 5.0 for _ in range(30))
    assert limiter.when(KEY, fault=True, retry_after=60.0) == 60.0
    assert limiter.when(KEY, fault=True, retry_after=900.0) == 300.0, "Retry-After up to the limiter's cap"
    assert limiter.when(KEY, retry_after=900.0) == 300.0


def test_add_many_sends_no_script_exists_and_survives_a_flushed_script_cache(work_queue, r):
    work_queue.add_many(["claim/ns/warm"])  # the script is loaded from now on
    before = {name: s["calls"] for name, s in r.info("commandstats").items()}
    assert [added.outcome for added in work_queue.add_many(["claim/ns/a", "claim/ns/b"])] == ["published"] * 2
    after = {name: s["calls"] for name, s in r.info("commandstats").items()}
    assert after.get("cmdstat_script|exists", 0) == before.get("cmdstat_script|exists", 0)
    r.script_flush()  # a restarted or flushed Redis has no scripts
    assert [added.outcome for added in work_queue.add_many(["claim/ns/c"])] == ["published"]

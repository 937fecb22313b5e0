"""Own writes, piece by piece, on a real redis-server and devcluster: the watcher's OBSERVE and the run's end in
every window of a run (before, during, after, a run that died, a lease taken over), the watcher's intake (one
round trip per event) and its fallbacks, and what :mod:`poolboy.kube` reports for each kind of write."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest
import redis
from celery import Celery

from cache.store import ObjectCache
from cache.writer import CacheWriter
from engine import own_writes, sweeps
from engine.enqueue import Enqueuer, EventIntake, Wakes
from engine.own_writes import OwnWrites
from poolboy import observability
from poolboy.kube import KubeClient
from poolboy.observability import Write
from poolboy.settings import Settings
from stack.testing import free_port
from tests.waiting import wait_for
from watcher import mapping
from watcher.delivery import EventDelivery, Intake
from workers.messages import CeleryPublisher
from workqueue import keyspace
from workqueue.queue import Publish, WorkQueue
from workqueue.roundtrip import RoundTrip, send_all

#: the route of claim events (the table :data:`watcher.mapping.ROUTES`)
ROUTE_CLAIM = mapping.POOLBOY_ROUTES[0]

KEY = "claim/ns/a"


@dataclass(frozen=True)
class Done:
    rerun: Publish | None
    deferred: int
    foreign: int


class OwnWritesQueue:
    """The steps of a run and of the watcher on one key, one round trip each; a run ends as the engine ends it, with
    its own writes settled and the key released in one script (:func:`engine.runner.finish`)."""

    def __init__(self, client: redis.Redis, lease_seconds: float = 30) -> None:
        self.redis = client
        self.queue = WorkQueue(client, lease_seconds=lease_seconds)
        self.own = OwnWrites(self.queue)

    def start(self, key: str, token: str) -> object:
        return self.queue.start(key, token)

    def done(self, key: str, token: str, writes: Sequence[str] = ()) -> Done:
        trip = RoundTrip(self.redis)
        settled, released = trip.atomic(self.own.settle_call(key, list(writes)), self.queue.done_call(key, token))
        trip.send()
        return Done(released.value, settled.value.deferred, settled.value.foreign)


@pytest.fixture()
def work_queue(r: redis.Redis) -> OwnWritesQueue:
    return OwnWritesQueue(r, lease_seconds=30)


def observe(work_queue: OwnWritesQueue, key: str, ident: str | None) -> str:
    """The watcher's OBSERVE for one key, alone in its round trip."""
    return send_all(work_queue.redis, [work_queue.own.observe_call(key, ident)])[0].outcome


def dead_redis() -> redis.Redis:
    """A client for a port nobody listens on: every command fails at once."""
    return redis.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=0.5)


# --- OBSERVE and DONE --------------------------------------------------------------------------------------------


def test_no_run_no_record_adds(work_queue: OwnWritesQueue) -> None:
    assert observe(work_queue, KEY, "u/1") == "published"
    assert observe(work_queue, KEY, "u/2") == "coalesced"


def test_a_finished_runs_own_write_is_skipped_for_its_key_only(work_queue: OwnWritesQueue) -> None:
    work_queue.start(KEY, "t1")
    work_queue.done(KEY, "t1", writes=["u/5"])
    assert observe(work_queue, KEY, "u/5") == "own-write"
    assert observe(work_queue, KEY, "u/6") == "published", "another version of the object is somebody else's change"
    assert observe(work_queue, "handle/op/h", "u/5") == "published", "the record is per key"


def test_events_during_the_run_are_deferred_and_judged_by_its_done(work_queue: OwnWritesQueue) -> None:
    work_queue.start(KEY, "t1")
    assert observe(work_queue, KEY, "u/7") == "deferred"  # the run's own write, seen before the run ended
    assert observe(work_queue, KEY, "u/8") == "deferred"  # somebody else's write during the run
    done = work_queue.done(KEY, "t1", writes=["u/7"])
    assert (done.deferred, done.foreign) == (2, 1)
    assert done.rerun is not None, "somebody else's change: DONE publishes exactly one more run"
    assert work_queue.start(KEY, "t2") is not None
    assert work_queue.done(KEY, "t2").deferred == 0, "judged once"


def test_a_run_whose_deferred_events_were_all_its_own_needs_no_rerun(work_queue: OwnWritesQueue) -> None:
    work_queue.start(KEY, "t1")
    assert observe(work_queue, KEY, "u/own") == "deferred"
    done = work_queue.done(KEY, "t1", writes=["u/own"])
    assert (done.deferred, done.foreign, done.rerun) == (1, 0, None)
    assert observe(work_queue, KEY, "u/own") == "own-write", "recorded for a late duplicate of the event too"


def test_an_event_without_a_write_id_during_a_run_is_pending_while_running(work_queue: OwnWritesQueue) -> None:
    """DELETED, LISTED, an object being deleted: never deferred, always a run after this one."""
    work_queue.start(KEY, "t1")
    assert observe(work_queue, KEY, None) == "pending-while-running"
    assert work_queue.done(KEY, "t1").rerun is not None


def test_a_run_that_died_leaves_its_deferred_events_to_the_next_run(work_queue: OwnWritesQueue) -> None:
    work_queue.start(KEY, "t1")
    assert observe(work_queue, KEY, "u/11") == "deferred"
    # t1 dies without DONE; the reaper re-runs the key as t2, whose DONE sees the event as not its own
    work_queue.redis.delete(keyspace.active(KEY))
    work_queue.start(KEY, "t2")
    done = work_queue.done(KEY, "t2")
    assert done.foreign == 1 and done.rerun is not None


def test_a_run_that_lost_its_lease_leaves_the_rerun_to_the_holder(work_queue: OwnWritesQueue) -> None:
    work_queue.start(KEY, "t1")
    assert observe(work_queue, KEY, "u/12") == "deferred"
    work_queue.redis.set(keyspace.active(KEY), "t2")  # t1's lease lapsed and t2 took the key
    done = work_queue.done(KEY, "t1")
    assert done.foreign == 1 and done.rerun is None, "not t1's to publish: the key is owed to t2's DONE"
    assert work_queue.done(KEY, "t2").rerun is not None


def wake(work_queue: OwnWritesQueue, key: str, seen: list[str]) -> str:
    """A finishing run's WAKE of another key, after writes ``seen``."""
    return send_all(work_queue.redis, [work_queue.own.wake_call(key, seen)])[0].outcome


def test_a_woken_key_skips_the_events_of_the_writes_that_woke_it(work_queue: OwnWritesQueue) -> None:
    """A handle run creates its resource and wakes its claim: the resource's event wakes the claim too, but the run
    the WAKE published reads the resource already."""
    assert wake(work_queue, KEY, ["res/1", "h/2"]) == "published"
    assert observe(work_queue, KEY, "res/1") == "own-write"
    assert observe(work_queue, KEY, "h/2") == "own-write"
    assert observe(work_queue, KEY, "res/3") == "coalesced", "a later write is news (the WAKE's message is queued)"
    assert observe(work_queue, "handle/op/h", "res/1") == "published", "recorded for the woken key only"


def test_a_wake_during_a_run_that_did_not_get_those_versions_runs_the_key_once_more(work_queue: OwnWritesQueue) -> None:
    work_queue.start(KEY, "t1")
    assert observe(work_queue, KEY, "res/4") == "deferred"  # the event came first, while the key ran
    assert wake(work_queue, KEY, ["res/4", "h/5"]) == "deferred", "deferred to the run going on, like the events"
    done = work_queue.done(KEY, "t1", writes=["claim/9"])  # t1 got neither version
    assert (done.deferred, done.foreign) == (2, 2)
    assert done.rerun is not None, "one more run, exactly once"
    assert work_queue.start(KEY, "t2") is not None
    assert work_queue.done(KEY, "t2", writes=["res/4", "h/5"]).rerun is None
    assert observe(work_queue, KEY, "h/5") == "own-write", "what the rerun got is recorded for late events"


def test_a_wake_during_a_run_that_got_those_versions_needs_no_rerun(work_queue: OwnWritesQueue) -> None:
    """A claim run started by its resource's ADDED event reads the handle the handle run is still writing: when the
    handle run's WAKE comes, the claim run has already got what it wrote."""
    work_queue.start(KEY, "t1")
    assert wake(work_queue, KEY, ["res/6", "h/7"]) == "deferred"
    done = work_queue.done(KEY, "t1", writes=["res/6", "h/7"])  # the versions t1 got, passed with its writes
    assert (done.deferred, done.foreign, done.rerun) == (2, 0, None)
    assert observe(work_queue, KEY, "h/7") == "own-write", "and their late events are skipped"


def test_a_wake_without_writes_is_a_plain_add(work_queue: OwnWritesQueue) -> None:
    assert wake(work_queue, KEY, []) == "published"
    assert observe(work_queue, KEY, "res/5") == "coalesced"
    assert not work_queue.redis.exists(keyspace.own_writes(KEY))


# --- a run's promise to wake a key ------------------------------------------------------------------------------

HANDLE = "handle/op/h"


def promised_wake(work_queue: OwnWritesQueue, key: str, seen: list[str], token: str) -> str:
    """The WAKE of a key the run holding ``token`` promised to wake."""
    return send_all(work_queue.redis, [work_queue.own.wake_call(key, seen, token, promised=True)])[0].outcome


def test_the_events_of_a_key_a_run_promised_to_wake_wait_for_its_wake(work_queue: OwnWritesQueue) -> None:
    """A handle run about to create its claim's resource promises to wake the claim: the resource's ADDED event
    does not run the claim while the handle run still writes; the handle run's WAKE runs it once, after."""
    work_queue.start(HANDLE, "h1")
    work_queue.own.promise(KEY, "h1")
    assert observe(work_queue, KEY, "res/1") == "held"
    assert observe(work_queue, KEY, None) == "held", "an event without a write id too"
    assert not work_queue.redis.exists(keyspace.pending(KEY)), "no run of the claim yet"
    assert promised_wake(work_queue, KEY, ["res/1"], "h1") == "published"
    assert not work_queue.redis.exists(keyspace.promised(KEY), keyspace.held_events(KEY)), "the promise is kept"
    assert observe(work_queue, KEY, "res/1") == "own-write", "a late duplicate of the event brings nothing"
    assert observe(work_queue, KEY, "res/2") == "coalesced", "after the WAKE, events add as before"


def test_a_wake_ends_only_its_own_runs_promise(work_queue: OwnWritesQueue) -> None:
    work_queue.own.promise(KEY, "h2")  # another run promised the claim too
    assert promised_wake(work_queue, KEY, [], "h1") == "published"
    assert work_queue.redis.get(keyspace.promised(KEY)) == "h2"
    assert observe(work_queue, KEY, "res/3") == "held", "held for the run that still promises"


def test_events_held_while_the_woken_key_runs_are_judged_by_that_run(work_queue: OwnWritesQueue) -> None:
    """The claim runs (its own event came before the promise): the held event and the WAKE's writes are deferred to
    that run, which runs once more only for what it did not get."""
    work_queue.start(KEY, "c1")
    work_queue.own.promise(KEY, "h1")
    assert observe(work_queue, KEY, "res/4") == "held"
    assert promised_wake(work_queue, KEY, ["h/5"], "h1") == "deferred"
    done = work_queue.done(KEY, "c1", writes=["h/5"])  # c1 got the handle's version, not the resource's
    assert (done.deferred, done.foreign) == (2, 1) and done.rerun is not None


def test_a_promise_lapses_with_the_lease_and_its_held_events_make_the_key_dirty(work_queue: OwnWritesQueue,
                                                                               r: redis.Redis) -> None:
    """A run that promised and died: its promise lapses within a lease, and the events it held make the key one a
    sweep runs (engine/sweeps.py), whatever its version."""
    work_queue.own.promise(KEY, "h1")
    assert 0 < r.pttl(keyspace.promised(KEY)) <= work_queue.queue.lease_ms
    assert observe(work_queue, KEY, "res/6") == "held"
    settings = Settings()
    r.hset(sweeps.cached_object_key(settings, KEY), mapping={"rv": "7", "clean": "7", "refresh": "9e12"})
    assert sweeps.dirty_keys(r, settings, [KEY]) == [KEY]
    r.delete(keyspace.held_events(KEY))
    assert sweeps.dirty_keys(r, settings, [KEY]) == [], "control: clean at its version, nothing held"


# --- a run that goes on with the key it promised to wake --------------------------------------------------------


def taking_wake(work_queue: OwnWritesQueue, key: str, seen: list[str], token: str, take: str) -> str:
    """The WAKE of a key the run holding ``token`` promised to wake, leasing it under ``take`` if it is idle."""
    call = work_queue.own.wake_call(key, seen, token, promised=True, take=take)
    return send_all(work_queue.redis, [call])[0].outcome


def test_a_promised_idle_key_is_leased_to_the_waking_run_and_no_message_is_owed(work_queue: OwnWritesQueue,
                                                                                r: redis.Redis) -> None:
    """A handle run that created its claim's resource goes on with the claim in the same task: the claim is leased
    under the token the run chose, with a deadline the lease reaper watches, and nothing is marked for a message."""
    work_queue.start(HANDLE, "h1")
    work_queue.own.promise(KEY, "h1")
    assert observe(work_queue, KEY, "res/1") == "held"
    assert taking_wake(work_queue, KEY, ["res/1"], "h1", take="c1") == "continued"
    assert r.get(keyspace.active(KEY)) == "c1"
    assert 0 < r.pttl(keyspace.active(KEY)) <= work_queue.queue.lease_ms
    assert r.zscore(keyspace.LEASES, KEY) is not None, "a lease the reaper finds should its holder die"
    assert not r.exists(keyspace.pending(KEY)), "no run is owed: the taker runs it"
    assert not r.exists(keyspace.promised(KEY), keyspace.held_events(KEY)), "the promise is kept"
    assert observe(work_queue, KEY, "res/1") == "own-write", "the run goes on with what the waking run wrote"
    assert observe(work_queue, KEY, "res/2") == "deferred", "someone else's change goes to the run taken"
    done = work_queue.done(KEY, "c1")
    assert done.foreign == 1 and done.rerun is not None, "and runs the key once more, as for any run"


def test_a_key_owed_or_running_is_not_taken(work_queue: OwnWritesQueue, r: redis.Redis) -> None:
    """Only an idle key is taken: a queued run keeps its message, a run going on gets the writes deferred."""
    assert observe(work_queue, KEY, "u/1") == "published"
    assert taking_wake(work_queue, KEY, ["res/3"], "h1", take="c1") == "coalesced"
    assert r.get(keyspace.active(KEY)) is None
    assert work_queue.start(KEY, "c2") is not None
    assert taking_wake(work_queue, KEY, ["res/4"], "h1", take="c3") == "deferred"
    assert r.get(keyspace.active(KEY)) == "c2", "the run going on keeps its lease"


def test_the_reaper_runs_a_taken_key_whose_taker_died(r: redis.Redis) -> None:
    """A task that leased a key to go on with and died before it ran it: the key runs again within a lease."""
    work_queue = OwnWritesQueue(r, lease_seconds=0.3)
    assert taking_wake(work_queue, KEY, [], "h1", take="c1") == "continued"
    reaped = wait_for(work_queue.queue.reap, 5, message="the taken key's lease to lapse and be reaped")
    assert [publish.key for publish in reaped] == [KEY]
    assert work_queue.start(KEY, "c2") is not None


def test_records_expire(work_queue: OwnWritesQueue, r: redis.Redis) -> None:
    work_queue.start(KEY, "t1")
    work_queue.done(KEY, "t1", writes=["u/1"])
    assert 0 < r.pttl(keyspace.own_writes(KEY)) <= own_writes.RECORD_TTL_MS


def test_records_keep_the_newest_ids_once_each_within_a_bound(work_queue: OwnWritesQueue, r: redis.Redis) -> None:
    """A key that runs all the time must not grow its records without end: the oldest ids go first (an event of one
    of those, should it still come, costs one extra run)."""
    uid = "0" * 36
    for i in range(200):
        work_queue.start(KEY, f"t{i}")
        work_queue.done(KEY, f"t{i}", writes=[f"{uid}/{i}", "provider/1"])  # the provider: a version every run got
    records = r.get(keyspace.own_writes(KEY)).split()
    assert len(" ".join(records)) <= 4096 and records.count("provider/1") == 1
    assert observe(work_queue, KEY, f"{uid}/199") == "own-write"
    assert observe(work_queue, KEY, f"{uid}/0") == "published"


# --- the watcher's intake ----------------------------------------------------------------------------------------


class RecordingEnqueuer(Enqueuer):
    """The real enqueuer; only what it would publish is recorded instead of sent."""

    def __init__(self, queue: WorkQueue, app: Celery) -> None:
        super().__init__(queue, CeleryPublisher(app))
        self.published: list[str] = []

    def publish_many(self, publishes: Sequence[Publish | None]) -> None:
        self.published += [p.key for p in publishes if p]  # pushed by the queue's script or to be sent


class RecordingIntake(EventIntake):
    """The real intake (cache, OBSERVE, fallbacks) on a :class:`RecordingEnqueuer`."""

    enqueuer: RecordingEnqueuer

    @property
    def published(self) -> list[str]:
        return self.enqueuer.published

    @property
    def work_queue(self) -> OwnWritesQueue:
        return OwnWritesQueue(self.enqueuer.queue.redis)


def _intake(redis_url: str, client: redis.Redis, cache: bool = False) -> RecordingIntake:
    settings = Settings.from_env(redis_url=redis_url, operator_namespace="op")
    queue = WorkQueue(client, lease_seconds=30)
    app = Celery("test-own-writes", broker=redis_url, set_as_current=False)
    writer = CacheWriter(client, settings.domain) if cache else None
    return RecordingIntake(RecordingEnqueuer(queue, app), OwnWrites(queue), writer)


@pytest.fixture()
def delivering() -> Iterator[Callable[[Intake], EventDelivery]]:
    """``delivering(intake)``: the watcher's event path to ``intake``, running as while the watcher holds its lease
    (so a failed delivery is retried), stopped after the test."""
    started: list[EventDelivery] = []

    def start(intake: Intake) -> EventDelivery:
        events = EventDelivery(Settings.from_env(operator_namespace="op"), intake=intake, cache=None,
                               observe=lambda *_: None, watching=lambda: True, stopping=threading.Event())
        events.start()
        started.append(events)
        return events

    yield start
    for events in started:
        events.stop()


def _event(events: EventDelivery, route: mapping.Route, event_type: str, obj: dict) -> None:
    """One watch event through the event path, delivered when this returns."""
    events.on_event(route, event_type, obj)
    events.queues[route].drain()


def _deliver(intake: Intake, event_type: str, obj: dict, wakes: Wakes) -> list[str]:
    """The outcomes of one event delivered alone."""
    return intake.deliver_many([(event_type, obj, wakes)])[0]


def _claim(version: str, **metadata: object) -> dict:
    return {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": version, **metadata}}


def test_watcher_skips_only_modified_and_added_events_of_live_objects(redis_server, r: redis.Redis,
                                                                       delivering) -> None:
    """MODIFIED and ADDED events carrying a recorded write id are the run's own (an ADDED with the very version a
    run's create returned is that create); DELETED, LISTED, an object being deleted, another version: a key."""
    intake = _intake(redis_server.url, r)
    intake.work_queue.start(KEY, "t1")
    intake.work_queue.done(KEY, "t1", writes=["u/1"])
    events = delivering(intake)
    _event(events, ROUTE_CLAIM, "MODIFIED", _claim("1"))
    _event(events, ROUTE_CLAIM, "ADDED", _claim("1"))
    assert intake.published == []
    for event_type in ("DELETED", "LISTED"):
        _event(events, ROUTE_CLAIM, event_type, _claim("1"))
        r.delete(keyspace.pending(KEY))  # as if the published run had started: the next event publishes again
    for claim in (_claim("1", deletionTimestamp="2020-01-01T00:00:00Z"), _claim("2")):
        _event(events, ROUTE_CLAIM, "MODIFIED", claim)
        r.delete(keyspace.pending(KEY))
    _event(events, ROUTE_CLAIM, "ADDED", _claim("3"))  # starts to match the watch with somebody else's version
    assert intake.published == [KEY] * 5


def test_intake_writes_the_cache_before_the_key_in_one_delivery(redis_server, r: redis.Redis) -> None:
    intake = _intake(redis_server.url, r, cache=True)
    claim = _claim("7")
    assert _deliver(intake, "MODIFIED", claim, [(KEY, "u/7")]) == ["published"]
    cached = ObjectCache(r, Settings().domain)
    assert r.hget(keyspace.cached_object("poolboy.gpte.redhat.com/v1|ResourceClaim|ns|a"), "rv") == "7"
    assert cached.redis.hget(keyspace.cached_object("poolboy.gpte.redhat.com/v1|ResourceClaim|ns|a"), "doc")
    assert intake.published == [KEY]
    assert _deliver(intake, "DELETED", claim, [(KEY, None)]) == ["coalesced"]


def test_intake_delivers_a_batch_in_order_each_event_as_if_alone(redis_server, r: redis.Redis) -> None:
    """The watcher's delivery queue hands over what queued up in one round trip (:mod:`watcher.delivery`): the
    outcomes are those of the events one by one, and the later version of an object is the one cached."""
    intake = _intake(redis_server.url, r, cache=True)
    other = {**_claim("3"), "metadata": {**_claim("3")["metadata"], "name": "b", "uid": "ub"}}
    outcomes = intake.deliver_many([("MODIFIED", _claim("7"), [(KEY, "u/7")]),
                                    ("MODIFIED", _claim("8"), [(KEY, "u/8")]),
                                    ("ADDED", other, [("claim/ns/b", "ub/3")])])
    assert outcomes == [["published"], ["coalesced"], ["published"]]
    assert r.hget(keyspace.cached_object("poolboy.gpte.redhat.com/v1|ResourceClaim|ns|a"), "rv") == "8"
    assert intake.published == [KEY, "claim/ns/b"]
    assert intake.deliver_many([]) == []


def test_a_watching_watcher_delivers_through_its_queue(redis_server, r: redis.Redis, delivering) -> None:
    intake = _intake(redis_server.url, r, cache=True)
    events = delivering(intake)
    for version in ("1", "2", "3"):
        events.on_event(ROUTE_CLAIM, "MODIFIED", _claim(version))
    events.queues[ROUTE_CLAIM].drain()
    assert intake.published == [KEY], "one run for the three versions: the work queue coalesced the later ones"
    assert r.hget(keyspace.cached_object("poolboy.gpte.redhat.com/v1|ResourceClaim|ns|a"), "rv") == "3"


def test_intake_hands_the_key_over_when_the_cache_cannot_hold_the_object(redis_server, r: redis.Redis) -> None:
    """An object nested deeper than the cache's JSON encoder goes (the API server accepts it) is not cached, but
    its event still wakes its key, at once: never a delivery retried forever."""
    intake = _intake(redis_server.url, r, cache=True)
    deep: dict = {}
    node = deep
    for _ in range(300):
        node["x"] = {}
        node = node["x"]
    claim = {**_claim("9"), "spec": deep}
    assert _deliver(intake, "MODIFIED", claim, [(KEY, "u/9")]) == ["published"]
    assert intake.published == [KEY]
    assert not r.exists(keyspace.cached_object("poolboy.gpte.redhat.com/v1|ResourceClaim|ns|a"))


def test_intake_falls_back_to_add_when_the_check_fails(redis_server, r: redis.Redis) -> None:
    intake = _intake(redis_server.url, r)
    intake.work_queue.start(KEY, "t1")
    r.sadd(keyspace.deferred_events(KEY), "u/0")  # not a string: deferring the event fails with WRONGTYPE
    assert _deliver(intake, "MODIFIED", _claim("1"), [(KEY, "u/1")]) == ["pending-while-running"]
    assert intake.work_queue.done(KEY, "t1").rerun is not None, "the plain ADD still owes the key one more run"


def test_intake_raises_when_redis_is_away_so_the_watcher_delivers_again(redis_server) -> None:
    intake = _intake(redis_server.url, dead_redis())
    with pytest.raises(redis.exceptions.ConnectionError):
        _deliver(intake, "MODIFIED", _claim("1"), [(KEY, "u/1")])


def test_watcher_skips_a_managed_resource_written_by_its_handle_run(redis_server, r: redis.Redis,
                                                                       delivering) -> None:
    handle_key = "handle/op/guid-h"
    intake = _intake(redis_server.url, r)
    intake.work_queue.start(handle_key, "t1")
    intake.work_queue.done(handle_key, "t1", writes=["m/3"])
    events = delivering(intake)
    resource = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "ns", "uid": "m", "resourceVersion": "3",
                             "annotations": {"poolboy.gpte.redhat.com/resource-handle-name": "guid-h",
                                             "poolboy.gpte.redhat.com/resource-handle-namespace": "op"}}}
    _event(events, mapping.MANAGED, "MODIFIED", resource)
    assert intake.published == []
    resource["metadata"]["resourceVersion"] = "4"  # its controller changed it afterwards
    _event(events, mapping.MANAGED, "MODIFIED", resource)
    assert intake.published == [handle_key]


# --- what kube.py reports ----------------------------------------------------------------------------------------


def test_kube_reports_writes_with_their_preconditions(devcluster) -> None:
    kube = KubeClient.from_settings(Settings.from_env(api_timeout=10.0), kubeconfig=str(devcluster.kubeconfig))
    ns = f"own-kube-{uuid.uuid4().hex[:8]}"
    seen: list[Write] = []
    observability.on_write(seen.append)
    try:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        cm = kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}})
        rv = cm["metadata"]["resourceVersion"]
        merged = kube.patch_merge("v1", "ConfigMap", "c", ns, {"data": {"a": "1"}}, resource_version=rv)
        unconditional = kube.patch_merge("v1", "ConfigMap", "c", ns, {"data": {"b": "2"}})
        tested = kube.patch_json("v1", "ConfigMap", "c", ns, [
            {"op": "test", "path": "/metadata/resourceVersion", "value": unconditional["metadata"]["resourceVersion"]},
            {"op": "add", "path": "/data/c", "value": "3"}])
        replaced = kube.replace({**tested, "data": {"d": "4"}})
        kube.delete("v1", "ConfigMap", "c", ns)
    finally:
        observability.remove_write_callback(seen.append)
        kube.close()
    uid = cm["metadata"]["uid"]
    mine = [w for w in seen if w.uid == uid]
    assert [(w.verb, w.conditional) for w in mine] == [
        ("create", False), ("patch", True), ("patch", False), ("patch", True), ("replace", True)]
    assert mine[1].precondition == rv and mine[1].resource_version == merged["metadata"]["resourceVersion"]
    assert mine[4].resource_version == replaced["metadata"]["resourceVersion"]
    collector = own_writes.Collector()
    for write in mine:
        collector.add(write)
    assert collector.idents == [f"{uid}/{w.resource_version}" for w in mine if w.verb == "create" or w.conditional]

"""The periodic sweeps pass over converged objects, on a real redis-server: an object is swept again only when its
cached version moved past the version its last successful run recorded, or when it owes a run. Runs end through the
engine's own end of a run (:func:`engine.runner.finish`)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from cache.store import ObjectCache
from engine import own_writes, runner, runtime
from engine.outcome import Failed, Outcome, Refused, Succeeded
from engine.sweeps import dirty_keys
from poolboy import keys
from poolboy.result import PermanentError
from poolboy.settings import Settings
from workers.app import app
from workers.messages import CeleryPublisher
from workqueue import keyspace

SETTINGS = Settings()
API = SETTINGS.api_version


@pytest.fixture()
def rt(redis_server) -> Iterator[runtime.Runtime]:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    yield runtime.build(CeleryPublisher(app), SETTINGS, None, client)
    client.close()


def _claim(name: str, rv: str) -> dict:
    return {"apiVersion": API, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "spec": {}}


def _cached_handle(cache: ObjectCache, rv: str) -> str:
    """A handle ``h`` at ``rv`` in the shared cache; its work key."""
    cache.put({"apiVersion": API, "kind": "ResourceHandle",
               "metadata": {"name": "h", "namespace": SETTINGS.operator_namespace, "resourceVersion": rv}})
    return keys.make(keys.HANDLE, SETTINGS.operator_namespace, "h")


def _run(rt: runtime.Runtime, key: str, outcome: Outcome, token: str = "token") -> None:
    """One run of ``key`` through the work queue, ending as the engine ends a run with ``outcome``."""
    assert rt.queue.start(key, token) is not None
    runner.finish(rt, keys.parse(key).kind, key, token, outcome, own_writes.Collector(), None)


def test_only_changed_or_owed_objects_are_swept(rt) -> None:
    assert rt.cache is not None
    converged, changed, failed, owed, never = (keys.make(keys.CLAIM, "ns", n) for n in "abcde")
    for key in (converged, changed, failed, owed, never):
        rt.cache.put(_claim(keys.parse(key)[2], "5"))
    for key in (converged, changed, owed):
        _run(rt, key, Succeeded())
    _run(rt, failed, Failed(60.0, "boom"))
    rt.cache.put(_claim("b", "6"))  # changed after its run: the watch event's add may have been lost
    rt.queue.add(owed)  # a run is owed (its message may sit on a dead worker)

    assert dirty_keys(rt.redis, SETTINGS, [converged, changed, failed, owed, never]) == [changed, failed, owed, never]


def test_a_refused_object_waits_for_its_recheck_not_for_the_sweeps(rt) -> None:
    """A permanent error is re-checked slowly (its re-check in the delaying queue): the sweeps pass the object over
    until it changes, so a refused claim is not tried again at every sweep."""
    assert rt.cache is not None
    refused, changed = (keys.make(keys.CLAIM, "ns", n) for n in "rc")
    for key in (refused, changed):
        rt.cache.put(_claim(keys.parse(key)[2], "5"))
        _run(rt, key, Refused(PermanentError("InvalidDefinition", "bad"), 300.0, time.time() + 300.0))
    rt.cache.put(_claim("c", "6"))  # the user fixed it: its change runs it, and so would a sweep
    assert dirty_keys(rt.redis, SETTINGS, [refused, changed]) == [changed]
    assert rt.delaying.size() == 2, "each re-check is due in the delaying queue"


def test_a_converged_object_runs_again_once_its_sync_period_is_over(rt) -> None:
    assert rt.cache is not None
    key = _cached_handle(rt.cache, "3")
    ran_at = time.time()
    _run(rt, key, Succeeded())
    period = SETTINGS.sync_period
    assert dirty_keys(rt.redis, SETTINGS, [key], now=ran_at + period * 0.89) == [], "up to 10 % early, no more"
    assert dirty_keys(rt.redis, SETTINGS, [key], now=time.time() + period) == [key]


def test_the_version_the_api_lists_is_compared_when_given(rt) -> None:
    """The resync reads versions from the API: a change the cache missed counts, and an unchanged object is
    passed over whatever the cache holds."""
    assert rt.cache is not None
    key = _cached_handle(rt.cache, "3")
    _run(rt, key, Succeeded())
    assert dirty_keys(rt.redis, SETTINGS, [key], {key: "3"}) == []
    assert dirty_keys(rt.redis, SETTINGS, [key], {key: "4"}) == [key], "changed behind the cache's back"


def test_after_a_redis_loss_every_object_is_swept(rt) -> None:
    assert rt.cache is not None
    key = _cached_handle(rt.cache, "3")
    _run(rt, key, Succeeded())
    rt.redis.flushall()
    assert dirty_keys(rt.redis, SETTINGS, [key], {key: "3"}) == [key]


def test_a_run_that_lost_its_lease_marks_nothing(rt) -> None:
    assert rt.cache is not None
    key = _cached_handle(rt.cache, "3")
    assert rt.queue.start(key, "mine") is not None
    rt.redis.set(keyspace.active(key), "someone-else")
    runner.finish(rt, keys.HANDLE, key, "mine", Succeeded(), own_writes.Collector(), None)
    assert dirty_keys(rt.redis, SETTINGS, [key]) == [key]


def test_a_failed_runs_retry_waits_in_redis_not_in_a_worker(rt) -> None:
    """A transient failure's retry is in the delaying queue: a worker killed after the run loses nothing, and the
    next release of the queue's due keys runs it."""
    assert rt.cache is not None
    key = _cached_handle(rt.cache, "3")
    before = time.time()
    _run(rt, key, Failed(0.2, "the API answered 503"))
    due = rt.delaying.deadline(key)
    assert due is not None and before + 0.2 <= due <= time.time() + 0.2
    assert rt.delaying.release_due(now=due - 0.01) == [], "not before its time"
    assert [added.outcome for added in rt.delaying.release_due(now=due)] == ["published"]

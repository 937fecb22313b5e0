"""The periodic sweeps pass over converged objects, on a real redis-server: an object is swept again only when its
cached version moved past the version its last successful run recorded, or when it owes a run."""

from __future__ import annotations

import redis

from cache.store import ObjectCache
from engine.sweeps import cached_object_key, dirty_keys
from poolboy import keys
from poolboy.settings import Settings
from workqueue.queue import Gate

SETTINGS = Settings()
API = SETTINGS.api_version


def _claim(name: str, rv: str) -> dict:
    return {"apiVersion": API, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "spec": {}}


def _cached_handle(cache: ObjectCache, rv: str) -> str:
    """A handle ``h`` at ``rv`` in the shared cache; its work key."""
    cache.put({"apiVersion": API, "kind": "ResourceHandle",
               "metadata": {"name": "h", "namespace": SETTINGS.operator_namespace, "resourceVersion": rv}})
    return keys.make(keys.HANDLE, SETTINGS.operator_namespace, "h")


def _run(gate: Gate, key: str, *, clean: bool) -> None:
    """One run of ``key`` through the gate, ending as a successful run does (or a failed one)."""
    assert gate.start(key, "token") is not None
    gate.done(key, "token", mark_clean=cached_object_key(SETTINGS, key) if clean else "")


def test_only_changed_or_owed_objects_are_swept(redis_server) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    cache, gate = ObjectCache(client, SETTINGS.domain), Gate(client)
    converged, changed, failed, owed, never = (keys.make(keys.CLAIM, "ns", n) for n in "abcde")
    for key in (converged, changed, failed, owed, never):
        cache.put(_claim(keys.parse(key)[2], "5"))
    for key in (converged, changed, owed):
        _run(gate, key, clean=True)
    _run(gate, failed, clean=False)
    cache.put(_claim("b", "6"))  # changed after its run: the watch event's add may have been lost
    gate.add(owed)  # a run is owed (its message may sit on a dead worker)

    assert dirty_keys(client, SETTINGS, [converged, changed, failed, owed, never]) == [changed, failed, owed, never]


def test_a_run_that_lost_its_lease_marks_nothing(redis_server) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    cache, gate = ObjectCache(client, SETTINGS.domain), Gate(client)
    key = _cached_handle(cache, "3")
    assert gate.start(key, "mine") is not None
    client.set(f"gate:{{{key}}}:active", "someone-else")
    gate.done(key, "mine", mark_clean=cached_object_key(SETTINGS, key))
    assert dirty_keys(client, SETTINGS, [key]) == [key]


def test_an_object_whose_retry_only_a_countdown_message_carries_is_swept_again(redis_server) -> None:
    """A run that failed transiently is retried by a countdown message the gate does not record: should the message
    be lost (its worker killed, Redis flushed), the object, at a version an earlier run reconciled, must not be
    passed over by the sweeps."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    cache, gate = ObjectCache(client, SETTINGS.domain), Gate(client)
    key = _cached_handle(cache, "3")
    _run(gate, key, clean=True)
    assert dirty_keys(client, SETTINGS, [key]) == []
    assert gate.start(key, "retrying") is not None
    gate.done(key, "retrying", mark_dirty=cached_object_key(SETTINGS, key))  # the version did not move
    assert dirty_keys(client, SETTINGS, [key]) == [key]
    _run(gate, key, clean=True)  # the retry ran and succeeded
    assert dirty_keys(client, SETTINGS, [key]) == []

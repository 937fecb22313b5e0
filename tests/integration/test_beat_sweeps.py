"""Beat runs the manage sweeps the shared cache can answer itself, on a real redis-server and a real ``poolboy
beat``: at rest it sends no task (Flower's history stays the reconciles'), a claim that changed since its last
successful run is added to the work queue, and a sweep the cache cannot answer is still a task for a worker."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from cache.store import ObjectCache
from engine.sweeps import cached_object_key
from poolboy import keys
from poolboy.settings import Settings
from stack.testing import BeatProcess, RedisServer
from tests.waiting import holds_until, wait_for
from workqueue import keyspace

pytestmark = pytest.mark.slow

SETTINGS = Settings()
#: every sweep each second; the pools' and the resync out of the way
ENV = {"POOLBOY_MANAGE_CLAIMS_INTERVAL": "1", "POOLBOY_MANAGE_HANDLES_INTERVAL": "3600",
       "POOLBOY_MANAGE_POOLS_INTERVAL": "3600", "POOLBOY_RESYNC_INTERVAL": "3600"}


@pytest.fixture()
def server() -> Iterator[RedisServer]:
    with RedisServer() as srv:
        yield srv


def _claim(cache: ObjectCache, name: str, rv: str, *, clean: bool) -> str:
    cache.put({"apiVersion": SETTINGS.api_version, "kind": "ResourceClaim",
               "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}})
    key = keys.make(keys.CLAIM, "ns", name)
    if clean:  # reconciled at this version, as a successful run records it
        cache.redis.hset(cached_object_key(SETTINGS, key), mapping={"clean": rv, "refresh": time.time() + 3600})
    return key


def _sweep_tasks(r: redis.Redis) -> int:
    return sum(int(r.llen(name)) for name in r.scan_iter(match="periodic*"))


def test_at_rest_beat_sends_no_sweep_task_and_adds_only_what_changed(server: RedisServer) -> None:
    r = redis.Redis.from_url(server.url)
    cache = ObjectCache(r, SETTINGS.domain)
    cache.heartbeat(3600)  # a watcher keeps the cache and has listed the claims: it can answer
    cache.mark_synced(SETTINGS.api_version, "ResourceClaim", None)
    converged = _claim(cache, "converged", "5", clean=True)
    def at_rest() -> None:
        assert _sweep_tasks(r) == 0, "a sweep the cache answers sends no task"
        assert not r.exists(keyspace.pending(converged)), "a converged claim is passed over"

    with BeatProcess(server.url, env=ENV):
        first = _claim(cache, "changed", "7", clean=False)
        wait_for(lambda: r.exists(keyspace.pending(first)), 20, message="the changed claim added by beat's sweep")
        later = _claim(cache, "later", "8", clean=False)  # a later sweep adds it: the window spans sweeps
        holds_until(at_rest, lambda: r.exists(keyspace.pending(later)), 20, message="a later sweep")
    assert sum(int(r.llen(name)) for name in r.scan_iter(match="claims*")) == 2, "one message per changed claim"


def test_a_sweep_the_cache_cannot_answer_is_a_task_for_a_worker(server: RedisServer) -> None:
    r = redis.Redis.from_url(server.url)
    with BeatProcess(server.url, env=ENV):  # no watcher ever kept a cache here
        wait_for(lambda: _sweep_tasks(r) >= 1, 20, message="a manage_claims task on the periodic queue")

"""The unbound-handle index as binding reads it (:mod:`cache.handle_index`), on a real redis-server: a burst of claims
in one worker process shares a recent snapshot of a scope's summaries instead of reading the whole index per claim,
a handle the process reserved leaves its snapshots, and nothing is concluded from a snapshot that a fresh read
would contradict (the claim reconciler reads afresh before "no handle": :mod:`poolboy.reconcilers.claim.bind`)."""

from __future__ import annotations

import time

import redis

from cache.handle_index import RedisHandleIndex
from cache.reader import CachedKubeClient

API = "poolboy.gpte.redhat.com/v1"
DOMAIN = "poolboy.gpte.redhat.com"
POOL_SCOPE = "pool=p"


def pool_handle(name: str, rv: int = 1) -> dict:
    return {"apiVersion": API, "kind": "ResourceHandle",
            "metadata": {"name": name, "namespace": "op", "resourceVersion": str(rv),
                         "creationTimestamp": "2026-11-28T00:00:00Z",
                         "labels": {f"{DOMAIN}/resource-pool-name": "p"}},
            "spec": {"resourcePool": {"name": "p"}, "resources": [{"provider": {"name": "bench"}}]}}


def claim(name: str) -> dict:
    return {"apiVersion": API, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "users", "uid": name, "resourceVersion": "1",
                         "creationTimestamp": "2026-11-28T00:00:00Z"}}


def calls(rb: redis.Redis, command: str) -> int:
    return int(rb.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def hgetalls(rb: redis.Redis) -> int:
    return calls(rb, "hgetall")


def hgets(rb: redis.Redis) -> int:
    return calls(rb, "hget")


def test_a_recent_snapshot_answers_without_a_read_and_a_fresh_read_sees_what_came_since(rb, cache, index) -> None:
    for name in ("h1", "h2"):
        cache.put(pool_handle(name))
    assert set(index.summaries(POOL_SCOPE) or {}) == {"h1", "h2"}
    reads = hgetalls(rb)
    cache.put(pool_handle("h3"))
    assert set(index.summaries(POOL_SCOPE, max_age=30) or {}) == {"h1", "h2"}, "the snapshot, as it was"
    assert hgetalls(rb) == reads, "answered without reading Redis"
    assert set(index.summaries(POOL_SCOPE) or {}) == {"h1", "h2", "h3"}, "max_age 0: read now"
    assert hgetalls(rb) == reads + 1


def test_a_snapshot_grows_old(rb, cache, index) -> None:
    cache.put(pool_handle("h1"))
    index.summaries(POOL_SCOPE)
    cache.put(pool_handle("h2"))
    time.sleep(0.06)  # the snapshot's age is the point here, not a wait for a condition
    assert set(index.summaries(POOL_SCOPE, max_age=0.05) or {}) == {"h1", "h2"}


def test_a_handle_this_process_reserved_leaves_its_snapshots_and_others_skip_it(cache, index) -> None:
    for name in ("h1", "h2"):
        cache.put(pool_handle(name))
    snapshot = index.summaries(POOL_SCOPE) or {}
    first = index.reserve(POOL_SCOPE, sorted(snapshot), claim("c1"))
    assert first.name == "h1"
    assert set(snapshot) == {"h1", "h2"}, "a snapshot a ranker holds is never changed under it"
    assert set(index.summaries(POOL_SCOPE, max_age=30) or {}) == {"h2"}
    # another process's snapshot still lists h1: the reservation script skips it
    assert index.reserve(POOL_SCOPE, ["h1", "h2"], claim("c2")).name == "h2"
    nothing = index.reserve(POOL_SCOPE, ["h1", "h2"], claim("c3"))
    assert nothing.name is None and not nothing.wait


def test_a_reservation_goes_past_the_first_batch_of_names(cache, index) -> None:
    names = [f"h{i:03d}" for i in range(40)]
    for name in names:
        cache.put(pool_handle(name))
    for i, name in enumerate(names[:35]):
        assert index.reserve(POOL_SCOPE, [name], claim(f"holder{i}")).name == name
    assert index.reserve(POOL_SCOPE, names, claim("late")).name == "h035", "found in the second batch of 32"


def test_handles_held_by_other_processes_leave_the_snapshot_once_passed(rb, cache, index) -> None:
    for name in ("h1", "h2", "h3"):
        cache.put(pool_handle(name))
    elsewhere = RedisHandleIndex(rb, API, "op")  # another worker process
    assert elsewhere.reserve(POOL_SCOPE, ["h1"], claim("elsewhere")).name == "h1"
    assert set(index.summaries(POOL_SCOPE) or {}) == {"h1", "h2", "h3"}, "held, not bound: still in the index"
    assert index.reserve(POOL_SCOPE, ["h1", "h2", "h3"], claim("c")).name == "h2"
    assert set(index.summaries(POOL_SCOPE, max_age=30) or {}) == {"h3"}, "the next claim here tries h3 first"


def test_a_reservation_brings_the_handle_as_cached_so_the_claim_reads_it_no_more(rb, cache, index) -> None:
    cache.put(pool_handle("h1", rv=7))
    reservation = index.reserve(POOL_SCOPE, ["h1"], claim("c1"))
    assert reservation.name == "h1"
    assert reservation.handle == pool_handle("h1", rv=7)


def test_a_runs_view_of_the_index_hands_the_reserved_handle_to_the_runs_reader(rb, cache, index) -> None:
    """RedisHandleIndex.for_run: the handle a reservation brought goes to the run's reader, whose get of it then asks
    Redis nothing; the same get by a reader the index did not prime reads the cache (the control)."""
    for name in ("h1", "h2"):
        cache.put(pool_handle(name, rv=7))
    run, other = CachedKubeClient(None, cache), CachedKubeClient(None, cache)  # type: ignore[arg-type]  # no API
    assert index.for_run(run.prime).reserve(POOL_SCOPE, ["h1"], claim("c1")).name == "h1"
    before = hgets(rb)
    assert run.get(API, "ResourceHandle", "h1", "op") == pool_handle("h1", rv=7)
    assert hgets(rb) == before, "answered from the reservation"
    assert index.reserve(POOL_SCOPE, ["h2"], claim("c2")).name == "h2"  # the process's index: no reader to hand to
    assert other.get(API, "ResourceHandle", "h2", "op") == pool_handle("h2", rv=7)
    assert hgets(rb) > before, "the control reads the cache"


def test_a_reservation_of_a_handle_the_cache_no_longer_holds_brings_none(rb, cache, index) -> None:
    cache.put(pool_handle("h1"))
    rb.hdel(f"poolboy:cache:o:{API}|ResourceHandle|op|h1", "doc")  # the index entry outlived its document
    reservation = index.reserve(POOL_SCOPE, ["h1"], claim("c1"))
    assert reservation.name == "h1" and reservation.handle is None

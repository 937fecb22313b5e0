"""The shared read cache on a real redis-server and devcluster: what the watcher writes, what a reader trusts, and
what happens when the cache is stale, flushed or not kept by any watcher."""

from __future__ import annotations

import os
import signal

import pytest
import redis
from celery import Celery

from cache.journal import RunJournal
from cache.reader import CachedKubeClient
from cache.store import UPDATED, WRITTEN, ObjectCache
from cache.writer import EPOCH, CacheWriter
from engine import runtime
from engine.registries import WATCHER
from engine.runner import begin
from poolboy import kube as kube_errors
from poolboy.domain.binding import candidates
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from stack.testing import RedisServer
from tests.integration.test_watcher import (
    API,
    RunningWatcher,
    create_namespace,
    kube,  # noqa: F401 - fixture
    poolboy_obj,
    settings_for,
    unique,
)
from tests.integration.watcher_keys import event_intake
from tests.waiting import wait_for
from workers.messages import CeleryPublisher
from workqueue import keyspace
from workqueue.roundtrip import send_all

DOMAIN = "poolboy.gpte.redhat.com"


@pytest.fixture()
def rb(redis_server) -> redis.Redis:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.close()


def handle(name: str, rv: str, labels: dict | None = None, namespace: str = "op") -> dict:
    return {"apiVersion": API, "kind": "ResourceHandle",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": labels or {}},
            "spec": {}}


# --- the cache itself ----------------------------------------------------------------------------------------------


def test_reader_trusts_nothing_without_a_live_watcher(rb: redis.Redis) -> None:
    cache = ObjectCache(rb, DOMAIN)
    cache.put(handle("h", "5"))
    assert cache.get(API, "ResourceHandle", "op", "h") is None, "no alive key: a dead watcher's view is not used"
    cache.heartbeat(5)
    assert cache.get(API, "ResourceHandle", "op", "h")["metadata"]["resourceVersion"] == "5"


def test_an_older_version_never_replaces_a_newer_one(rb: redis.Redis) -> None:
    """Versions are ordered by the watch stream, never by comparing resourceVersions: these are opaque and, here,
    sort the wrong way round on purpose."""
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    pool = f"{DOMAIN}/resource-pool-name"
    cache.put(handle("h", "zz", {pool: "p"}))  # the watch delivers the object
    cache.put(handle("h", "mm", {pool: "q"}), mode=WRITTEN)  # a worker's write: newer than anything watched so far
    cache.put(handle("h", "zz", {pool: "p"}))  # the stream repeats an older event (a resumed watch): kept out
    cache.mark_synced(API, "ResourceHandle", "op")
    assert cache.get(API, "ResourceHandle", "op", "h")["metadata"]["resourceVersion"] == "mm"
    assert [h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", f"{pool}=q")] == ["h"]
    assert cache.list(API, "ResourceHandle", "op", f"{pool}=p") == []
    cache.put(handle("h", "mm", {pool: "q"}))  # the stream reaches the write
    cache.put(handle("h", "aa", {pool: "p"}))  # and goes on: someone else's later write
    assert cache.get(API, "ResourceHandle", "op", "h")["metadata"]["resourceVersion"] == "aa"


def test_a_late_write_through_of_a_version_the_watch_passed_is_ignored(rb: redis.Redis) -> None:
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    cache.put(handle("h", "k2"))
    cache.put(handle("h", "k1"))  # the watch passed the worker's write k2 and a later one, k1
    cache.put(handle("h", "k2"), mode=UPDATED)  # the worker's write-through arrives only now
    assert cache.get(API, "ResourceHandle", "op", "h")["metadata"]["resourceVersion"] == "k1"


def test_a_list_is_the_state_now(rb: redis.Redis) -> None:
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    cache.put(handle("h", "b"), mode=WRITTEN)
    cache.put_many([handle("h", "c")])  # a re-list (the stream that would have delivered b was lost)
    cache.put(handle("h", "d"))
    assert cache.get(API, "ResourceHandle", "op", "h")["metadata"]["resourceVersion"] == "d"


def test_a_deleted_object_is_not_resurrected_by_a_late_write(rb: redis.Redis) -> None:
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    cache.put(handle("h", "x7"))
    cache.delete(handle("h", "x8"))
    cache.put(handle("h", "x7"), mode=UPDATED)  # a worker's write-through arriving after the DELETED
    assert cache.get(API, "ResourceHandle", "op", "h") is None
    cache.put(handle("h", "x9"), mode=WRITTEN)  # created again under the same name by a worker
    assert cache.get(API, "ResourceHandle", "op", "h")["metadata"]["resourceVersion"] == "x9"
    cache.delete(handle("h", "x8"))  # the old object's DELETED, late: the new one stays
    assert cache.get(API, "ResourceHandle", "op", "h")["metadata"]["resourceVersion"] == "x9"


def test_write_through_only_updates_what_the_watcher_has(rb: redis.Redis) -> None:
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    cache.put(handle("h", "3"), mode=UPDATED)
    assert cache.get(API, "ResourceHandle", "op", "h") is None


def test_lists_moving_between_label_indexes(rb: redis.Redis) -> None:
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    pool, claim = f"{DOMAIN}/resource-pool-name", f"{DOMAIN}/resource-claim-name"
    cache.put(handle("a", "1", {pool: "p"}))
    cache.put(handle("b", "2", {pool: "p"}))
    assert cache.list(API, "ResourceHandle", "op", f"{pool}=p") is None, "not synced yet: ask the API"
    cache.mark_synced(API, "ResourceHandle", "op")
    selector = f"{pool}=p,!{claim}"
    assert sorted(h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", selector)) == ["a", "b"]
    cache.put(handle("a", "3", {pool: "p", claim: "c"}))  # bound
    assert [h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", selector)] == ["b"]
    assert [h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", f"{claim}=c")] == ["a"]
    assert cache.list(API, "ResourceHandle", "op", f"{pool} in (p)") is None, "set-based: ask the API"
    assert sorted(h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", None)) == ["a", "b"]


def test_a_label_is_indexed_by_presence_only_where_the_domain_selects_on_its_presence(rb: redis.Redis) -> None:
    """The waiting claims are listed by the presence of their label; no other label is, so no other label's presence
    is indexed (a command fewer per change), and a selector on one still gets the right answer from the kind index."""
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    pool, claim, waiting = (f"{DOMAIN}/{name}" for name in ("resource-pool-name", "resource-claim-name",
                                                             "resource-claim-waiting"))
    cache.put(handle("a", "1", {pool: "p", claim: "c"}))
    cache.put(handle("b", "2", {pool: "p"}))
    cache.put({"apiVersion": API, "kind": "ResourceClaim", "spec": {},
               "metadata": {"name": "w", "namespace": "u", "resourceVersion": "3", "labels": {waiting: "true"}}})
    cache.mark_synced(API, "ResourceHandle", "op")
    cache.mark_synced(API, "ResourceClaim", None)
    indexed = {key.decode().removeprefix("poolboy:cache:i:") for key in rb.scan_iter("poolboy:cache:i:label|*")}
    assert indexed == {f"label|{API}|ResourceHandle|{pool}=p", f"label|{API}|ResourceHandle|{claim}=c",
                       f"label|{API}|ResourceClaim|{waiting}=true", f"label|{API}|ResourceClaim|{waiting}"}
    assert [h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", claim)] == ["a"]
    assert [h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", f"{pool}=p,{claim}")] == ["a"]
    assert [c["metadata"]["name"] for c in cache.list(API, "ResourceClaim", None, waiting)] == ["w"]


def _calls(client: redis.Redis) -> dict[str, int]:
    return {name: stats["calls"] for name, stats in client.info("commandstats").items()}


def test_an_update_that_keeps_its_indexes_writes_no_index(rb: redis.Redis) -> None:
    """Most watch events are MODIFIED with the same labels: the put must not rewrite every index membership."""
    cache = ObjectCache(rb, DOMAIN)
    pool = f"{DOMAIN}/resource-pool-name"
    cache.put(handle("h", "1", {pool: "p"}))
    before = _calls(rb)
    cache.put(handle("h", "2", {pool: "p"}))
    after = _calls(rb)
    delta = {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}
    delta.pop("cmdstat_info", None)
    assert delta == {"cmdstat_evalsha": 1, "cmdstat_hmget": 1, "cmdstat_hset": 1}


def test_an_object_recreated_after_its_tombstone_is_indexed_again(rb: redis.Redis) -> None:
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(5)
    cache.mark_synced(API, "ResourceHandle", "op")
    pool = f"{DOMAIN}/resource-pool-name"
    cache.put(handle("h", "1", {pool: "p"}))
    cache.delete(handle("h", "2", {pool: "p"}))
    assert cache.list(API, "ResourceHandle", "op", f"{pool}=p") == []
    cache.put(handle("h", "3", {pool: "p"}))
    assert [h["metadata"]["name"] for h in cache.list(API, "ResourceHandle", "op", f"{pool}=p")] == ["h"]
    assert rb.ttl("poolboy:cache:o:" + f"{API}|ResourceHandle|op|h") == -1, "the tombstone's expiry is cleared"


# --- with a watcher on devcluster ----------------------------------------------------------------------------------


@pytest.fixture()
def stack(kube: KubeClient, rb: redis.Redis, redis_server):  # noqa: F811
    opns = create_namespace(kube, unique("op"))
    settings = settings_for(opns)
    writer = CacheWriter(rb, settings.domain, alive_seconds=5, check_interval=0.2)
    intake = event_intake(redis_server.url, rb, writer)
    with RunningWatcher(settings, kube, intake, leader_election=False, cache=writer) as running:
        yield running, opns, ObjectCache(rb, settings.domain)


def cached(cache: ObjectCache, namespace: str, name: str, kind: str = "ResourcePool") -> dict | None:
    return cache.get(API, kind, namespace, name)


def test_watcher_keeps_the_cache_and_prunes_on_relist(stack, kube: KubeClient) -> None:  # noqa: F811
    running, opns, cache = stack
    name = unique("pool")
    created = kube.create(poolboy_obj("ResourcePool", opns, name, {"minAvailable": 0}))
    version = created["metadata"]["resourceVersion"]
    ghost = poolboy_obj("ResourcePool", opns, "ghost", {}, resourceVersion="1")  # a previous leader's stale view
    cache.put(ghost)
    running.watcher.relist_all()
    wait_for(lambda: cached(cache, opns, "ghost") is None, message="the re-list pruned the ghost")
    wait_for(lambda: (cached(cache, opns, name) or {}).get("metadata", {}).get("resourceVersion") == version,
             message="the created pool in the cache")
    kube.delete(API, "ResourcePool", name, opns)
    wait_for(lambda: cached(cache, opns, name) is None, message="the deleted pool gone from the cache")
    ns = wait_for(lambda: cache.get("v1", "Namespace", None, opns), message="namespaces are cached too")
    assert ns["metadata"]["name"] == opns


def test_flushed_redis_is_noticed_and_every_key_re_added(stack, kube: KubeClient,  # noqa: F811
                                                          rb: redis.Redis) -> None:
    running, opns, cache = stack
    name = unique("pool")
    kube.create(poolboy_obj("ResourcePool", opns, name, {"minAvailable": 0}))
    key = f"pool/{opns}/{name}"
    running.recorder.wait(key)
    wait_for(lambda: cached(cache, opns, name), message="pool cached")
    before, losses = running.recorder.count(key), _redis_losses()
    rb.flushall()
    # the watcher's epoch check notices the loss and re-lists: the key comes back after the flush, within a deadline
    # that the periodic resync (the other way back) cannot meet
    patience = 30.0
    assert Settings.from_env().resync_interval > 10 * patience
    wait_for(lambda: _redis_losses() > losses, timeout=patience, message="the watcher noticed the lost epoch")
    running.recorder.wait(key, at_least=before + 1, timeout=patience)
    wait_for(lambda: cached(cache, opns, name), timeout=patience, message="the cache refilled after FLUSHALL")
    assert rb.get(EPOCH) is not None and rb.exists(keyspace.CACHE_ALIVE)


def _redis_losses() -> float:
    """Times this process's watchers re-listed everything because Redis lost their epoch."""
    return WATCHER.get_sample_value("poolboy_redis_state_lost_total") or 0.0


def test_stale_cache_costs_one_conflict_and_a_fresh_read(stack, kube: KubeClient,  # noqa: F811
                                                          rb: redis.Redis) -> None:
    _running, opns, cache = stack
    name = unique("pool")
    created = kube.create(poolboy_obj("ResourcePool", opns, name, {"minAvailable": 0}))
    wait_for(lambda: cached(cache, opns, name), message="pool cached")
    # the object changes behind the watcher's back: the cache keeps an older version
    stale = dict(created)
    kube.patch_merge(API, "ResourcePool", name, opns, {"spec": {"minAvailable": 3}})
    wait_for(lambda: cached(cache, opns, name)["spec"]["minAvailable"] == 3, message="the watcher saw the change")
    rb.delete(f"poolboy:cache:o:{API}|ResourcePool|{opns}|{name}")
    cache.put(stale)
    reader = CachedKubeClient(kube, cache)
    read = reader.get(API, "ResourcePool", name, opns)
    assert read["spec"]["minAvailable"] == 0, "the reader returns the cached (stale) version"
    with pytest.raises(kube_errors.Conflict):
        reader.patch_merge(API, "ResourcePool", name, opns, {"spec": {"minAvailable": 1}},
                           resource_version=read["metadata"]["resourceVersion"])
    fresh = reader.get(API, "ResourcePool", name, opns)
    assert fresh["spec"]["minAvailable"] == 3, "after a failed precondition the run reads from the API"
    written = reader.patch_merge(API, "ResourcePool", name, opns, {"spec": {"minAvailable": 4}},
                                 resource_version=fresh["metadata"]["resourceVersion"])
    assert kube.get(API, "ResourcePool", name, opns)["spec"]["minAvailable"] == 4
    target = int(written["metadata"]["resourceVersion"])
    wait_for(lambda: int(cached(cache, opns, name)["metadata"]["resourceVersion"]) >= target,
             message="write-through or watcher brought the cache up to date")


def test_a_run_reads_its_own_writes_and_puts_them_in_the_cache_at_its_end(kube: KubeClient,  # noqa: F811
                                                                           rb: redis.Redis) -> None:
    """A run's writes go into the cache with its last round trip (engine.runner.finish); until then the run itself
    sees them as the write-through would have shown them, and the cache keeps the version before."""
    opns = create_namespace(kube, unique("op"))
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(30)
    cache.mark_synced(API, "ResourcePool", opns)
    pool, claim = f"{DOMAIN}/resource-pool-name", f"{DOMAIN}/resource-claim-name"
    first = kube.create(poolboy_obj("ResourcePool", opns, "a", {"minAvailable": 0}, labels={pool: "p"}))
    cache.put(first)  # as the watcher would
    reader = CachedKubeClient(kube, cache, journal=RunJournal())

    patched = reader.patch_merge(API, "ResourcePool", "a", opns, {"metadata": {"labels": {claim: "c"}}})
    created = reader.create(poolboy_obj("ResourcePool", opns, "b", {"minAvailable": 1}, labels={pool: "p"}))
    assert cached(cache, opns, "a")["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert cached(cache, opns, "b") is None, "nothing in the cache before the run's end"
    assert reader.get(API, "ResourcePool", "a", opns)["metadata"]["resourceVersion"] == \
        patched["metadata"]["resourceVersion"], "the run reads its own write"
    def names(selector: str) -> list[str]:
        return [p["metadata"]["name"] for p in reader.list(API, "ResourcePool", opns, label_selector=selector)]

    assert names(f"{pool}=p,!{claim}") == ["b"], "the bound one left the list, the created one joined it"
    assert names(f"{claim}=c") == ["a"]

    send_all(rb, reader.journal.deferred_puts(cache))
    assert cached(cache, opns, "a")["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
    assert cached(cache, opns, "b")["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert [p["metadata"]["name"] for p in cache.list(API, "ResourcePool", opns, f"{pool}=p,!{claim}")] == ["b"]
    assert reader.journal.deferred_puts(cache) == [], "taken once"


#: the handle names the CRD's schema accepts begin so
GUID = "guid-"


def _handle_of(namespace: str, name: str, *, pool: str | None = None, provider: str = "x", claim: bool = False,
               ignored: bool = False) -> dict:
    labels = {f"{DOMAIN}/resource-pool-name": pool} if pool else {}
    if claim:
        labels[f"{DOMAIN}/resource-claim-name"] = "c"
    if ignored:
        labels[f"{DOMAIN}/ignore"] = ""
    spec: dict = {"resources": [{"provider": {"apiVersion": API, "kind": "ResourceProvider", "name": provider,
                                              "namespace": namespace}}]}
    if pool:
        spec["resourcePool"] = {"apiVersion": API, "kind": "ResourcePool", "name": pool, "namespace": namespace}
    if claim:
        spec["resourceClaim"] = {"apiVersion": API, "kind": "ResourceClaim", "name": "c", "namespace": "users"}
    return poolboy_obj("ResourceHandle", namespace, GUID + name, spec, labels=labels)


def test_the_unbound_index_answers_a_list_as_the_api_client_does(kube: KubeClient,  # noqa: F811
                                                                  rb: redis.Redis) -> None:
    """Reader.list(index=...): the cache answers from its unbound index, the API client by listing and applying the
    index's rule; the same handles either way (bound, ignored and other scopes' left out), and a run's own writes
    move a handle out of the answer before they reach the cache."""
    opns = create_namespace(kube, unique("op"))
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(30)
    cache.mark_synced(API, "ResourceHandle", opns)
    for body in (_handle_of(opns, "free-1", pool="p"), _handle_of(opns, "free-2", pool="p"),
                 _handle_of(opns, "bound", pool="p", claim=True), _handle_of(opns, "ignored", pool="p", ignored=True),
                 _handle_of(opns, "other-pool", pool="q"), _handle_of(opns, "by-provider", provider="y"),
                 _handle_of(opns, "no-provider", provider="")):
        cache.put(kube.create(body))  # as the watcher would
    from_cache = CachedKubeClient(None, cache)  # type: ignore[arg-type]  # an API request would fail
    from_api = CachedKubeClient(kube, None)

    def names(reader: CachedKubeClient, *scopes: str, selector: str | None = None) -> list[str]:
        listed = reader.list(API, "ResourceHandle", opns, label_selector=selector,
                             index=candidates.unbound_in(DOMAIN, *scopes))
        return sorted(h["metadata"]["name"].removeprefix(GUID) for h in listed)

    expectations = {("pool=p",): ["free-1", "free-2"], ("provider=y", "provider="): ["by-provider", "no-provider"],
                    ("provider=x",): ["free-1", "free-2", "other-pool"], ("pool=none",): []}
    for scopes, expected in expectations.items():
        assert names(from_cache, *scopes) == expected, scopes
        assert names(from_api, *scopes) == expected, scopes
    assert names(from_cache, "provider=x", selector=f"{DOMAIN}/resource-pool-name=q") == ["other-pool"], \
        "the label selector applies too"

    run = CachedKubeClient(kube, cache, journal=RunJournal())
    bound = {"metadata": {"labels": {f"{DOMAIN}/resource-claim-name": "c"}}}
    run.patch_merge(API, "ResourceHandle", GUID + "free-1", opns, bound)
    assert names(run, "pool=p") == ["free-2"], "the run's own bind moved the handle out of its answer"
    assert names(from_cache, "pool=p") == ["free-1", "free-2"], "others see it once the write reaches the cache"


def test_a_run_starts_and_reads_its_own_object_in_one_round_trip(rb: redis.Redis, redis_server) -> None:
    """engine.runner.begin: START and the cache read of the run's object share a round trip; the reconcile's first
    get of its object then asks Redis nothing. A key another run holds is not started, and its object not read."""
    settings = Settings.from_env(redis_url=redis_server.url, operator_namespace="op")
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(30)
    cache.put(poolboy_obj("ResourcePool", "op", "a", {"minAvailable": 1}, resourceVersion="7"))
    app = Celery("test-begin", broker=redis_server.url, set_as_current=False)
    rt = runtime.build(CeleryPublisher(app), settings, None, rb)
    rt.cache = cache
    reader = CachedKubeClient(None, cache, journal=RunJournal())  # type: ignore[arg-type]  # the API is never asked

    started = begin(rt, "pool", "pool/op/a", "t1", "m1", reader)
    before = _calls(rb)
    read = reader.get(API, "ResourcePool", "a", "op")
    after = _calls(rb)
    assert started is not None and read["metadata"]["resourceVersion"] == "7"
    after.pop("cmdstat_info", None)
    before.pop("cmdstat_info", None)
    assert after == before, "the first get of the run's object is answered from the start's round trip"
    assert begin(rt, "pool", "pool/op/a", "t2", "m2", CachedKubeClient(None, cache)) is None  # type: ignore[arg-type]
    app.close()


def test_what_a_run_names_ahead_is_read_in_one_round_trip_and_answers_its_gets(rb: redis.Redis) -> None:
    """CachedKubeClient.prefetch (the engine's read-ahead, Context.prefetcher): a handle run's claim, namespace,
    provider and resource in one pipeline; each get is then answered from it, a miss still asks the API, and a reader
    that reads from the API after a conflict reads nothing ahead."""
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(30)
    objects = [poolboy_obj("ResourceClaim", "users", "c", {}, resourceVersion="3"),
               poolboy_obj("ResourceProvider", "op", "p", {}, resourceVersion="4"),
               {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "users", "resourceVersion": "5"}}]
    for obj in objects:
        cache.put(obj)
    reader = CachedKubeClient(None, cache)  # type: ignore[arg-type]  # the API is never asked for what was found
    before = _calls(rb)
    reader.prefetch([(API, "ResourceClaim", "c", "users"), ("v1", "Namespace", "users", None),
                     (API, "ResourceProvider", "p", "op"), ("v1", "ConfigMap", "absent", "users")])
    middle = _calls(rb)
    got = [reader.get(API, "ResourceClaim", "c", "users"), reader.get("v1", "Namespace", "users"),
           reader.get(API, "ResourceProvider", "p", "op")]
    after = _calls(rb)
    for stats in (before, middle, after):
        stats.pop("cmdstat_info", None)
    assert [obj["metadata"]["resourceVersion"] for obj in got] == ["3", "5", "4"]
    assert middle["cmdstat_hget"] - before.get("cmdstat_hget", 0) == 4, "every name asked, in one pipeline"
    assert after == middle, "the gets asked Redis nothing"

    fresh = CachedKubeClient(None, cache)  # type: ignore[arg-type]
    fresh.fresh = True
    fresh.prefetch([(API, "ResourceClaim", "c", "users")])
    assert _calls(rb).get("cmdstat_hget") == after["cmdstat_hget"], "a fresh reader reads nothing ahead"


def test_a_run_reports_the_versions_it_got_by_name(rb: redis.Redis) -> None:
    """What DONE counts as the run's own besides its writes (engine/own_writes.py): every version it got by name,
    from the cache or read ahead; not what it listed, and nothing it did not get."""
    cache = ObjectCache(rb, DOMAIN)
    cache.heartbeat(30)
    cache.put(poolboy_obj("ResourceProvider", "op", "p", {}, resourceVersion="4", uid="u-p"))
    cache.put(poolboy_obj("ResourceHandle", "op", "h", {}, resourceVersion="8", uid="u-h"))
    cache.put(poolboy_obj("ResourceHandle", "op", "other", {}, resourceVersion="9", uid="u-o"))
    reader = CachedKubeClient(None, cache)  # type: ignore[arg-type]
    reader.prefetch([(API, "ResourceHandle", "h", "op"), (API, "ResourceHandle", "other", "op")])
    reader.get(API, "ResourceProvider", "p", "op")
    reader.get_or_none(API, "ResourceHandle", "h", "op")
    reader.get(API, "ResourceProvider", "p", "op")
    assert reader.journal.seen() == ["u-p/4", "u-h/8"], "read ahead but never got: not seen"


def test_reader_falls_back_to_the_api_when_redis_is_away(kube: KubeClient) -> None:  # noqa: F811
    opns = create_namespace(kube, unique("op"))
    name = unique("pool")
    kube.create(poolboy_obj("ResourcePool", opns, name, {"minAvailable": 0}))
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    reader = CachedKubeClient(kube, ObjectCache(dead, DOMAIN))
    assert reader.get(API, "ResourcePool", name, opns)["metadata"]["name"] == name
    assert [p["metadata"]["name"] for p in reader.list(API, "ResourcePool", opns)] == [name]


def test_redis_answering_again_after_an_outage_re_adds_every_key(kube: KubeClient) -> None:  # noqa: F811
    """Redis unreachable for a while, then back with its data (as after a restart with persistence): the epoch key
    is still there, but work queued or run meanwhile may be lost, so the watcher re-lists and re-adds every key as
    soon as Redis answers again."""
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url, socket_timeout=0.5, socket_connect_timeout=0.5)
    try:
        opns = create_namespace(kube, unique("op"))
        writer = CacheWriter(client, DOMAIN, alive_seconds=5, check_interval=0.2)
        with RunningWatcher(settings_for(opns), kube, event_intake(server.url, client, writer), leader_election=False,
                            cache=writer) as running:
            name = unique("pool")
            kube.create(poolboy_obj("ResourcePool", opns, name, {"minAvailable": 0}))
            key = f"pool/{opns}/{name}"
            running.recorder.wait(key)
            before = running.recorder.count(key)
            os.kill(server.process.pid, signal.SIGSTOP)
            try:
                wait_for(lambda: writer.unreachable, timeout=10, message="the watcher to notice Redis is away")
                assert running.recorder.count(key) == before
            finally:
                os.kill(server.process.pid, signal.SIGCONT)
            running.recorder.wait(key, at_least=before + 1, timeout=30)
    finally:
        client.close()
        server.stop()


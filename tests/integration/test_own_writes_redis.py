"""Own writes, piece by piece, on a real redis-server and devcluster: the two scripts' decisions in every window of a
run (before, during, between settle and DONE, after, a new run), the watcher's event filter and its fallback when
Redis is away, the worker's fallback, and what :mod:`poolboy.kube` reports for each kind of write."""

from __future__ import annotations

import uuid

import pytest
import redis
from celery import Celery

from poolboy import observability
from poolboy.kube import KubeClient
from poolboy.observability import Write
from poolboy.settings import Settings
from stack.testing import free_port
from watcher import mapping
from watcher.main import Watcher
from workers import own_writes
from workers.due import DueIndex
from workers.enqueue import Enqueuer
from workers.gate import Gate
from workers.own_writes import ADD, DEFERRED, SKIP, OwnWrites
from workers.runtime import Runtime
from workers.tasks import settle

#: the route of claim events (the table :data:`watcher.mapping.ROUTES`)
ROUTE_CLAIM = mapping.POOLBOY_ROUTES[0]

KEY = "claim/ns/a"


@pytest.fixture()
def ow(r: redis.Redis) -> OwnWrites:
    return OwnWrites(r)


@pytest.fixture()
def gate(r: redis.Redis) -> Gate:
    return Gate(r, lease_seconds=30)


def dead_redis() -> redis.Redis:
    """A client for a port nobody listens on: every command fails at once."""
    return redis.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=0.5)


# --- the scripts -------------------------------------------------------------------------------------------------


def test_no_run_no_record_adds(ow: OwnWrites) -> None:
    assert ow.check(KEY, "u/1") == ADD


def test_settled_own_write_is_skipped_for_its_key_only(ow: OwnWrites, gate: Gate) -> None:
    gate.start(KEY, "t1")
    ow.settle(KEY, "t1", ["u/5"])
    gate.done(KEY, "t1")
    assert ow.check(KEY, "u/5") == SKIP
    assert ow.check(KEY, "u/6") == ADD, "another version of the object is somebody else's change"
    assert ow.check("handle/op/h", "u/5") == ADD, "the record is per key"


def test_event_during_the_run_is_deferred_and_judged_by_its_settle(ow: OwnWrites, gate: Gate) -> None:
    gate.start(KEY, "t1")
    assert ow.check(KEY, "u/7") == DEFERRED  # the run's own write, seen before the run ended
    assert ow.check(KEY, "u/8") == DEFERRED  # somebody else's write during the run
    settled = ow.settle(KEY, "t1", ["u/7"])
    assert settled.deferred == 2 and settled.own == 1 and settled.foreign == ["u/8"]
    assert ow.settle(KEY, "t1", []).deferred == 0, "judged once"


def test_between_settle_and_done_the_key_is_added(ow: OwnWrites, gate: Gate) -> None:
    gate.start(KEY, "t1")
    ow.settle(KEY, "t1", ["u/7"])
    assert ow.check(KEY, "u/9") == ADD  # settled: the gate's pending-while-running makes DONE re-publish
    assert ow.check(KEY, "u/7") == SKIP
    assert gate.add(KEY)[0] == "pending-while-running"
    assert gate.done(KEY, "t1") is not None


def test_a_new_run_defers_again_despite_the_previous_closing_mark(ow: OwnWrites, gate: Gate) -> None:
    gate.start(KEY, "t1")
    ow.settle(KEY, "t1", [])
    gate.done(KEY, "t1")
    gate.start(KEY, "t2")
    assert ow.check(KEY, "u/10") == DEFERRED


def test_a_run_that_died_leaves_its_deferred_events_to_the_next_run(ow: OwnWrites, gate: Gate) -> None:
    gate.start(KEY, "t1")
    assert ow.check(KEY, "u/11") == DEFERRED
    # t1 dies without settling; the reaper re-runs the key as t2, whose settle sees the event as not its own
    gate.redis.delete(f"gate:{{{KEY}}}:active")
    gate.start(KEY, "t2")
    assert ow.settle(KEY, "t2", []).foreign == ["u/11"]


def test_records_expire(ow: OwnWrites, r: redis.Redis) -> None:
    ow.settle(KEY, "t1", ["u/1"])
    assert 0 < r.pttl(own_writes.records_key(KEY)) <= own_writes.RECORD_TTL_MS


# --- the worker's settle -----------------------------------------------------------------------------------------


def _runtime(redis_server, r: redis.Redis, own: OwnWrites) -> Runtime:
    settings = Settings.from_env(redis_url=redis_server.url)
    gate = Gate(r, lease_seconds=30)
    app = Celery("test-own-writes", broker=redis_server.url, set_as_current=False)
    return Runtime(settings, r, gate, DueIndex(r), Enqueuer(settings, app, gate), own)


def test_worker_settle_reruns_the_key_for_a_foreign_change(redis_server, r: redis.Redis, ow: OwnWrites) -> None:
    rt = _runtime(redis_server, r, ow)
    rt.gate.start(KEY, "t1")
    assert ow.check(KEY, "u/own") == DEFERRED
    assert ow.check(KEY, "u/other") == DEFERRED
    settle(rt, KEY, "t1", ["u/own"])
    assert rt.gate.done(KEY, "t1") is not None, "DONE must publish one more run"


def test_worker_settle_of_only_own_writes_needs_no_rerun(redis_server, r: redis.Redis, ow: OwnWrites) -> None:
    rt = _runtime(redis_server, r, ow)
    rt.gate.start(KEY, "t1")
    assert ow.check(KEY, "u/own") == DEFERRED
    settle(rt, KEY, "t1", ["u/own"])
    assert rt.gate.done(KEY, "t1") is None


def test_worker_that_cannot_settle_reruns_the_key(redis_server, r: redis.Redis) -> None:
    rt = _runtime(redis_server, r, OwnWrites(dead_redis()))
    rt.gate.start(KEY, "t1")
    settle(rt, KEY, "t1", ["u/own"])  # never raises
    assert rt.gate.done(KEY, "t1") is not None


# --- the watcher's filter ----------------------------------------------------------------------------------------


def _watcher(check: OwnWrites | None) -> tuple[Watcher, list[str]]:
    keys: list[str] = []
    settings = Settings.from_env(operator_namespace="op")
    watcher = Watcher(settings, None, keys.append, leader_election=False, own_writes=check)  # type: ignore[arg-type]
    watcher._informers = [object()]  # type: ignore[list-item]  # "watching", so _emit does not drop keys
    return watcher, keys


def _claim(version: str, **metadata: object) -> dict:
    return {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": version, **metadata}}


def test_watcher_skips_only_modified_and_added_events_of_live_objects(ow: OwnWrites) -> None:
    """MODIFIED and ADDED events carrying a recorded write id are the run's own (an ADDED with the very version a
    run's create returned is that create); DELETED, LISTED, an object being deleted, another version: a key."""
    ow.settle(KEY, "t1", ["u/1"])
    watcher, keys = _watcher(ow)
    watcher.on_event(ROUTE_CLAIM, "MODIFIED", _claim("1"))
    watcher.on_event(ROUTE_CLAIM, "ADDED", _claim("1"))
    assert keys == []
    for event_type in ("DELETED", "LISTED"):
        watcher.on_event(ROUTE_CLAIM, event_type, _claim("1"))
    watcher.on_event(ROUTE_CLAIM, "MODIFIED", _claim("1", deletionTimestamp="2020-01-01T00:00:00Z"))
    watcher.on_event(ROUTE_CLAIM, "MODIFIED", _claim("2"))
    watcher.on_event(ROUTE_CLAIM, "ADDED", _claim("3"))  # starts to match the watch with somebody else's version
    assert keys == [KEY] * 5


def test_watcher_adds_the_key_when_redis_is_away() -> None:
    watcher, keys = _watcher(OwnWrites(dead_redis()))
    watcher.on_event(ROUTE_CLAIM, "MODIFIED", _claim("1"))
    assert keys == [KEY]


def test_watcher_skips_a_managed_resource_written_by_its_handle_run(ow: OwnWrites) -> None:
    handle_key = "handle/op/guid-h"
    ow.settle(handle_key, "t1", ["m/3"])
    watcher, keys = _watcher(ow)
    resource = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "ns", "uid": "m", "resourceVersion": "3",
                             "annotations": {"poolboy.gpte.redhat.com/resource-handle-name": "guid-h",
                                             "poolboy.gpte.redhat.com/resource-handle-namespace": "op"}}}
    watcher.on_event(mapping.MANAGED, "MODIFIED", resource)
    assert keys == []
    resource["metadata"]["resourceVersion"] = "4"  # its controller changed it afterwards
    watcher.on_event(mapping.MANAGED, "MODIFIED", resource)
    assert keys == [handle_key]


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

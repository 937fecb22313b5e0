"""Own writes end to end: a real watcher (``poolboy watcher``), a real worker, devcluster and Redis, with the
instrumented reconcilers below (the worker's ``--reconcilers tests.integration.test_own_writes:RECONCILERS``).

A reconcile of a claim or handle copies its ``test/value`` annotation into ``status.observed`` (a conditional status
write: its own object), and a claim annotated ``test/touch-handle: <name>`` also stamps that handle (a write to
*another* key's object, like a claim binding a handle). Each run is logged in Redis (``runs:<key>``).

"Nothing more will run" is proven, never slept for: the watcher's metrics say it has handled every event that
the test's and the reconcilers' writes caused (each one either added a key or was skipped), and then the work queue and
the queues are idle.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from devcluster.testing import DEFAULT_CRDS, DevCluster
from poolboy.context import Context
from poolboy.keys import CLAIM, HANDLE, KINDS
from poolboy.kube import KubeClient
from poolboy.result import Result
from poolboy.settings import Settings
from stack.testing import RedisServer, WorkerProcess, _ServiceProcess, free_port
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV
from tests.waiting import wait_for

pytestmark = pytest.mark.slow

API = "poolboy.gpte.redhat.com/v1"
RECONCILERS_REF = "tests.integration.test_own_writes:RECONCILERS"


# --- the instrumented reconcilers (run inside the worker) --------------------------------------------------------


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["POOLBOY_REDIS_URL"], decode_responses=True)


def _log(key: str, event: str, **extra: Any) -> None:
    _redis().rpush(f"runs:{key}", json.dumps({"e": event, "t": time.time(), **extra}))


def _copy_value(ctx: Context, obj: dict[str, Any]) -> None:
    """status.observed := the test/value annotation, with the object's resourceVersion as precondition."""
    wanted = (obj["metadata"].get("annotations") or {}).get("test/value", "")
    if (obj.get("status") or {}).get("observed") != wanted:
        ctx.kube.replace_status({**obj, "status": {**(obj.get("status") or {}), "observed": wanted}})


def _touch_handle(ctx: Context, claim: dict[str, Any]) -> None:
    """Stamp the named handle with the claim's value: a write to another key's object."""
    name = (claim["metadata"].get("annotations") or {}).get("test/touch-handle")
    if not name:
        return
    handle = ctx.kube.get(API, "ResourceHandle", name, ctx.settings.operator_namespace)
    value = (claim["metadata"].get("annotations") or {}).get("test/value", "")
    if (handle["metadata"].get("annotations") or {}).get("test/touched-by") != value:
        ctx.kube.patch_merge(API, "ResourceHandle", name, ctx.settings.operator_namespace,
                             {"metadata": {"annotations": {"test/touched-by": value}}},
                             resource_version=handle["metadata"]["resourceVersion"])


def _hold(key: str) -> None:
    """With ``hold:<key>`` set, stay in the run after writing until the test pushes ``release:<key>``."""
    r = _redis()
    if r.delete(f"hold:{key}"):
        _log(key, "holding")
        r.blpop([f"release:{key}"], timeout=30)


def _make(kind: str):  # type: ignore[no-untyped-def]
    def reconcile(ctx: Context, namespace: str, name: str) -> Result:
        key = f"{kind}/{namespace}/{name}"
        obj = ctx.kube.get_or_none(API, KINDS[kind], name, namespace)
        value = ((obj or {}).get("metadata", {}).get("annotations") or {}).get("test/value")
        _log(key, "start", value=value)
        if obj is not None:
            _copy_value(ctx, obj)
            if kind == CLAIM:
                _touch_handle(ctx, obj)
            _hold(key)
        _log(key, "end")
        return Result()

    reconcile.__name__ = f"reconcile_{kind}"
    return reconcile


RECONCILERS = {kind: _make(kind) for kind in KINDS}


# --- the stack ---------------------------------------------------------------------------------------------------


class WatcherProcess(_ServiceProcess):
    """``poolboy watcher`` without leader election, with its metrics on a port of its own."""

    command = "watcher"

    def __init__(self, redis_url: str, kubeconfig: str, env: dict[str, str]) -> None:
        self.metrics_port = free_port()
        super().__init__(redis_url, ["--kubeconfig", kubeconfig, "--no-leader-election", "--metrics-port",
                                     str(self.metrics_port), "--watch-timeout", "30"], env)

    def __enter__(self) -> WatcherProcess:
        self.launch()
        return self

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample the watcher exposes, by (name, sorted labels); empty until it serves."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2) as response:
                text = response.read().decode()
        except OSError:
            return {}
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def handled(self) -> float:
        """Events that went through the whole handling: a key added, or skipped (for any reason)."""
        return sum(v for (name, _), v in self.metrics().items()
                   if name in ("poolboy_watcher_keys_total", "poolboy_watch_events_skipped_total"))

    def skipped(self, reason: str) -> float:
        return self.metrics().get(("poolboy_watch_events_skipped_total", (("reason", reason),)), 0.0)


@dataclass
class Stack:
    """Private devcluster and Redis (so every watch event and every run is this module's), a worker, a watcher."""

    kube: KubeClient
    r: redis.Redis
    watcher: WatcherProcess
    op: str


@dataclass
class World:
    kube: KubeClient
    r: redis.Redis
    watcher: WatcherProcess
    op: str
    ns: str
    baseline: float

    def runs(self, key: str) -> list[dict[str, Any]]:
        return [x for x in er.runs(self.r, key) if x["e"] == "start"]

    def create_claim(self, name: str, value: str, **annotations: str) -> str:
        self.kube.create({"apiVersion": API, "kind": "ResourceClaim",
                          "metadata": {"name": name, "namespace": self.ns,
                                       "annotations": {"test/value": value, **annotations}},
                          "spec": {}})
        return f"{CLAIM}/{self.ns}/{name}"

    def create_handle(self, name: str, value: str) -> str:
        self.kube.create({"apiVersion": API, "kind": "ResourceHandle",
                          "metadata": {"name": name, "namespace": self.op, "annotations": {"test/value": value}},
                          "spec": {}})
        return f"{HANDLE}/{self.op}/{name}"

    def observed(self, kind: str, name: str) -> str | None:
        namespace = self.ns if kind == "ResourceClaim" else self.op
        return (self.kube.get(API, kind, name, namespace).get("status") or {}).get("observed")

    def skipped(self, reason: str) -> float:
        return self.watcher.skipped(reason)

    def settle(self, events: int, timeout: float = 30.0) -> None:
        """Wait until the watcher has handled ``events`` events since the test began, then until nothing can run."""
        wait_for(lambda: self.watcher.handled() - self.baseline >= events, timeout,
                 message=f"the watcher handled {events} events; metrics: {self.watcher.metrics()}")
        wait_for(lambda: er.idle(self.r, ("claims", "handles")), timeout, message="work queue and queues idle")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    op = f"own-op-{uuid.uuid4().hex[:8]}"
    with DevCluster(crds=[DEFAULT_CRDS]) as cluster, RedisServer() as server:
        kubeconfig = str(cluster.kubeconfig)
        kube = KubeClient.from_settings(Settings.from_env(api_timeout=10.0), kubeconfig=kubeconfig)
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": op}})
        env = {**ENV, "POOLBOY_NAMESPACE": op}
        r = redis.Redis.from_url(server.url, decode_responses=True)
        with WorkerProcess(server.url, ["claims", "handles"], 1, env=env, kubeconfig=kubeconfig,
                           reconcilers=RECONCILERS_REF) as worker, \
                WatcherProcess(server.url, kubeconfig, env) as watcher:
            try:
                wait_for(lambda: watcher.metrics().get(("poolboy_watcher_informers", (("group", "poolboy"),))),
                         30, message=f"watcher informers running; log: {watcher.log()[-2000:]}")
                yield Stack(kube, r, watcher, op)
            finally:
                if os.environ.get("OWN_WRITES_TEST_LOGS"):
                    print(watcher.log()[-6000:], worker.log()[-6000:])
        r.close()
        kube.close()


@pytest.fixture()
def world(stack: Stack) -> World:
    """A user namespace of the test's own; earlier tests have settled, so the watcher's count is a baseline."""
    ns = f"own-user-{uuid.uuid4().hex[:8]}"
    stack.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return World(stack.kube, stack.r, stack.watcher, stack.op, ns, stack.watcher.handled())


# --- tests -------------------------------------------------------------------------------------------------------


def test_own_status_write_runs_the_key_once(world: World) -> None:
    skipped = world.skipped("own-write") + world.skipped("deferred")
    key = world.create_claim("a", "v1")
    # two events: the test's create (ADDED: a key) and the run's own status write (MODIFIED: skipped)
    world.settle(2)
    assert world.observed("ResourceClaim", "a") == "v1"
    assert [run["value"] for run in world.runs(key)] == ["v1"]
    assert world.skipped("own-write") + world.skipped("deferred") == skipped + 1


def test_a_change_by_someone_else_still_runs_the_key(world: World) -> None:
    key = world.create_claim("b", "v1")
    world.settle(2)
    assert len(world.runs(key)) == 1
    # someone else changes the object the run writes: its event is never the run's own
    world.kube.patch_merge(API, "ResourceClaim", "b", world.ns, {"metadata": {"annotations": {"test/value": "v2"}}})
    world.settle(4)  # + the test's patch (a key) + the run's status write (skipped)
    assert [run["value"] for run in world.runs(key)] == ["v1", "v2"]
    assert world.observed("ResourceClaim", "b") == "v2"
    # a status-only write by someone else (the status subresource the reconciler also writes) runs it too
    world.kube.patch_merge(API, "ResourceClaim", "b", world.ns, {"status": {"other": "x"}}, status=True)
    world.settle(5)
    assert len(world.runs(key)) == 3


def test_a_write_by_another_keys_run_still_runs_the_written_key(world: World) -> None:
    handle = world.create_handle("guid-own-h1", "hv")
    world.settle(2)
    assert len(world.runs(handle)) == 1
    claim = world.create_claim("c", "cv", **{"test/touch-handle": "guid-own-h1"})
    # the claim's create (a key), its own status write (skipped), its stamp on the handle (a handle key)
    world.settle(5)
    handle_obj = world.kube.get(API, "ResourceHandle", "guid-own-h1", world.op)
    assert handle_obj["metadata"]["annotations"]["test/touched-by"] == "cv"
    assert len(world.runs(claim)) == 1
    assert len(world.runs(handle)) == 2, "the claim's write to the handle must run the handle"


def test_own_write_seen_during_the_run_is_judged_by_the_run(world: World) -> None:
    key = f"{CLAIM}/{world.ns}/d"
    deferred = world.skipped("deferred")
    world.r.set(f"hold:{key}", "1")
    world.create_claim("d", "v1")
    wait_for(lambda: any(x["e"] == "holding" for x in er.runs(world.r, key)), 30, message="the run holds")
    wait_for(lambda: world.skipped("deferred") >= deferred + 1, 30,
             message="the run's own write was deferred to it (its event came while it ran)")
    world.r.rpush(f"release:{key}", "go")
    world.settle(2)
    assert len(world.runs(key)) == 1


def test_change_by_someone_else_during_the_run_runs_the_key_again(world: World) -> None:
    key = f"{CLAIM}/{world.ns}/e"
    deferred = world.skipped("deferred")
    world.r.set(f"hold:{key}", "1")
    world.create_claim("e", "v1")
    wait_for(lambda: any(x["e"] == "holding" for x in er.runs(world.r, key)), 30, message="the run holds")
    wait_for(lambda: world.skipped("deferred") >= deferred + 1, 30, message="own write deferred")
    world.kube.patch_merge(API, "ResourceClaim", "e", world.ns, {"metadata": {"annotations": {"test/value": "v2"}}})
    wait_for(lambda: world.skipped("deferred") >= deferred + 2, 30, message="the other write deferred too")
    world.r.rpush(f"release:{key}", "go")
    world.settle(4)  # create, own write (run 1), the test's patch, own write (run 2)
    assert [run["value"] for run in world.runs(key)] == ["v1", "v2"]
    assert world.observed("ResourceClaim", "e") == "v2"

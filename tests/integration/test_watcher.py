"""The watcher against a real devcluster: which events give which keys, managed-resource discovery, 410 re-lists,
restarts, leader failover and fault injection. Process behaviour (restart, failover, 410 after a pause) uses watcher
subprocesses recording keys to a file (:mod:`tests.integration.watcher_keys`); the rest runs a Watcher in a thread
with a recording intake.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.registries import WATCHER
from poolboy.kube import AlreadyExists, ApiError, KubeClient
from poolboy.settings import Settings
from tests.integration.manifests import crd
from tests.integration.watcher_keys import KeyRecorder
from tests.waiting import wait_for
from watcher.delivery import Intake
from watcher.leader import LEASE_API, LeaderElector
from watcher.main import Watcher

D = "poolboy.gpte.redhat.com"
API = f"{D}/v1"
ROOT = Path(__file__).resolve().parents[2]


# --- helpers -----------------------------------------------------------------------------------------------------


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def settings_for(operator_namespace: str, **overrides) -> Settings:
    return Settings.from_env(operator_namespace=operator_namespace, api_timeout=10.0, **overrides)


def create_namespace(kube: KubeClient, name: str) -> str:
    with_retries(lambda: kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
    return name


def with_retries(fn, attempts: int = 50):
    """Test-side writes under fault injection: retry transient errors (the watcher is what is under test).

    An AlreadyExists after a failed attempt means that attempt did land: that is success for a create.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except AlreadyExists:
            if attempt == 0:
                raise
            return None
        except ApiError as error:
            if not error.transient or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def poolboy_obj(kind: str, namespace: str, name: str, spec: dict | None = None, **metadata) -> dict:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name, "namespace": namespace, **metadata},
            "spec": spec if spec is not None else {}}


class RunningWatcher:
    """A Watcher in a thread recording the keys it hands over (to ``inner`` too, when given), stopped at the end of
    the test."""

    def __init__(self, settings: Settings, kube: KubeClient, inner: Intake | None = None, **kwargs) -> None:
        self.recorder = KeyRecorder(inner)
        self.watcher = Watcher(settings, kube, self.recorder, **kwargs)
        self.thread = threading.Thread(target=self.watcher.run, daemon=True)

    def __enter__(self) -> RunningWatcher:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.watcher.stop()
        self.thread.join(15)
        assert not self.thread.is_alive(), "watcher did not stop"


@pytest.fixture()
def kube(devcluster) -> Iterator[KubeClient]:
    client = KubeClient.from_settings(settings_for("poolboy"), kubeconfig=str(devcluster.kubeconfig))
    yield client
    client.close()


@pytest.fixture()
def opns(kube: KubeClient) -> str:
    return create_namespace(kube, unique("op"))


@pytest.fixture()
def userns(kube: KubeClient) -> str:
    return create_namespace(kube, unique("user"))


# --- in-process watcher --------------------------------------------------------------------------------------------


def test_every_poolboy_kind_and_status_only_change_gives_a_key(kube, opns, userns) -> None:
    with RunningWatcher(settings_for(opns), kube, leader_election=False, watch_timeout=5) as running:
        rec = running.recorder
        kube.create(poolboy_obj("ResourceClaim", userns, "c1"))
        kube.create(poolboy_obj("ResourceHandle", opns, "guid-h1"))
        kube.create(poolboy_obj("ResourcePool", opns, "p1"))
        kube.create(poolboy_obj("ResourceProvider", opns, "pr1"))
        kube.create(poolboy_obj("ResourcePoolScaling", opns, "s1", {"resourcePool": {"name": "p1"}, "count": 1}))
        for key in (f"claim/{userns}/c1", f"handle/{opns}/guid-h1", f"pool/{opns}/p1", f"provider/{opns}/pr1",
                    f"scaling/{opns}/s1"):
            rec.wait(key)

        before = rec.count(f"claim/{userns}/c1")
        kube.patch_merge(API, "ResourceClaim", "c1", userns, {"status": {"summary": {"state": "new"}}}, status=True)
        rec.wait(f"claim/{userns}/c1", before + 1)  # status-only change

        before = rec.count(f"handle/{opns}/guid-h1")
        kube.patch_merge(API, "ResourceHandle", "guid-h1", opns, {"metadata": {"annotations": {"a": "b"}}})
        rec.wait(f"handle/{opns}/guid-h1", before + 1)  # metadata-only change

        before = rec.count(f"pool/{opns}/p1")
        kube.delete(API, "ResourcePool", "p1", opns)
        rec.wait(f"pool/{opns}/p1", before + 1)  # deletion


def test_objects_outside_scope_or_ignored_give_no_key(kube, opns, userns) -> None:
    with RunningWatcher(settings_for(opns), kube, leader_election=False, watch_timeout=5) as running:
        rec = running.recorder
        kube.create(poolboy_obj("ResourceClaim", userns, "ignored", labels={f"{D}/ignore": ""}))
        kube.create(poolboy_obj("ResourceHandle", userns, "guid-wrong-ns"))  # handles live in opns only
        kube.create(poolboy_obj("ResourceHandle", opns, "guid-ignored", labels={f"{D}/ignore": "true"}))
        # markers created after, in the same collections: once they arrive, anything earlier would have too
        kube.create(poolboy_obj("ResourceClaim", userns, "marker"))
        kube.create(poolboy_obj("ResourceHandle", opns, "guid-marker"))
        rec.wait(f"claim/{userns}/marker")
        rec.wait(f"handle/{opns}/guid-marker")
        assert rec.count(f"claim/{userns}/ignored") == 0
        assert rec.count(f"handle/{userns}/guid-wrong-ns") == 0
        assert rec.count(f"handle/{opns}/guid-ignored") == 0


def create_handle_referencing(kube: KubeClient, opns: str, name: str, api_version: str, kind: str,
                              namespace: str | None, in_status: bool = True) -> dict:
    """A handle whose one resource references ``kind`` (in status, as the handle reconciler records it, or in the
    spec's legacy ``reference``). Status is ignored on create (status subresource), so it is written after."""
    reference = {"apiVersion": api_version, "kind": kind, "name": "x"}
    if namespace:
        reference["namespace"] = namespace
    entry = {"provider": {"name": "p"}, "reference": reference}
    handle = kube.create(poolboy_obj("ResourceHandle", opns, name, {"resources": [] if in_status else [entry]}))
    if in_status:
        handle = kube.patch_merge(API, "ResourceHandle", name, opns,
                                  {"status": {"resources": [{"name": "r0", "reference": reference}]}}, status=True)
    return handle


def managed_configmap(namespace: str, name: str, annotations: dict | None) -> dict:
    metadata: dict = {"name": name, "namespace": namespace}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {}}


def test_managed_resource_events_map_to_their_handle(kube, opns, userns) -> None:
    name_a, ns_a, deleted_a = f"{D}/resource-handle-name", f"{D}/resource-handle-namespace", \
        f"{D}/resource-handle-deleted"
    # exists before the watcher starts: the list must find it
    kube.create(managed_configmap(userns, "early", {name_a: "h-early", ns_a: opns}))
    handle = create_handle_referencing(kube, opns, "guid-h1", "v1", "ConfigMap", userns, in_status=False)
    assert handle["metadata"]["name"] == "guid-h1"
    with RunningWatcher(settings_for(opns), kube, leader_election=False, watch_timeout=5) as running:
        rec = running.recorder
        rec.wait(f"handle/{opns}/h-early")
        rec.wait(f"handle/{opns}/guid-h1")  # the handle itself, listed

        before = rec.count(f"handle/{opns}/guid-h1")
        kube.create(managed_configmap(userns, "no-annotations", None))
        kube.create(managed_configmap(userns, "deleted", {name_a: "h-deleted", ns_a: opns, deleted_a: ""}))
        kube.create(managed_configmap(userns, "no-name", {ns_a: opns, "other": "x"}))
        kube.create(managed_configmap(userns, "managed", {name_a: "guid-h1", ns_a: opns}))
        rec.wait(f"handle/{opns}/guid-h1", before + 1)
        before = rec.count(f"handle/{opns}/guid-h1")
        kube.patch_merge("v1", "ConfigMap", "managed", userns, {"data": {"state": "ready"}})
        rec.wait(f"handle/{opns}/guid-h1", before + 1)
        # skipped (docs/behaviour.md#watching-managed-resources): no annotations, D/resource-handle-deleted, no
        # D/resource-handle-name
        assert {k for k in rec.keys if k.startswith("handle/")} == {f"handle/{opns}/guid-h1", f"handle/{opns}/h-early"}


def test_managed_kinds_are_discovered_from_handles(kube, opns, userns) -> None:
    group = f"g{uuid.uuid4().hex[:6]}.example.com"
    with RunningWatcher(settings_for(opns), kube, leader_election=False, watch_timeout=5) as running:
        rec, watcher = running.recorder, running.watcher
        kube.create(crd(group, "Widget"))
        wait_for(lambda: kube.resource_info(f"{group}/v1", "Widget"), timeout=10, message="CRD served")
        create_handle_referencing(kube, opns, "guid-hw", f"{group}/v1", "Widget", userns)
        target = (f"{group}/v1", "Widget", userns)
        wait_for(lambda: target in watcher._managed.targets, timeout=10, message="Widget informer started")
        rec.wait(f"handle/{opns}/guid-hw")  # the handle itself
        before = rec.count(f"handle/{opns}/guid-hw")
        kube.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                     "metadata": {"name": "w1", "namespace": userns,
                                  "annotations": {f"{D}/resource-handle-name": "guid-hw",
                                                  f"{D}/resource-handle-namespace": opns}}})
        rec.wait(f"handle/{opns}/guid-hw", before + 1)

        kube.delete(API, "ResourceHandle", "guid-hw", opns)
        wait_for(lambda: target not in watcher._managed.targets, timeout=10,
                 message="Widget informer stopped once no handle references it")


def test_fault_injection_still_delivers_every_change(fresh_devcluster) -> None:
    kube = KubeClient.from_settings(settings_for("op"), kubeconfig=str(fresh_devcluster.kubeconfig))
    opns, userns = create_namespace(kube, "op"), create_namespace(kube, "user")
    errors_before = watch_errors()
    fresh_devcluster.request("PUT", "/_devcluster/faults",
                             {"error_rate": 0.1, "codes": [500, 429, 409], "include_watch": True})
    with RunningWatcher(settings_for(opns), kube, leader_election=False, watch_timeout=1) as running:
        rec = running.recorder
        # the faults must really hit the watcher's own lists and watches (1 s streams: many requests)
        wait_for(lambda: watch_errors() > errors_before, timeout=30, message="an injected fault hit the watcher")
        names = [f"c{index}" for index in range(30)]
        for name in names:
            with_retries(lambda name=name: kube.create(poolboy_obj("ResourceClaim", userns, name)))
        for name in names:
            rec.wait(f"claim/{userns}/{name}", timeout=60)
        counts = Counter(rec.keys)
        for name in names[:10]:
            with_retries(lambda name=name: kube.patch_merge(API, "ResourceClaim", name, userns,
                                                            {"status": {"n": 1}}, status=True))
        for name in names[:10]:
            rec.wait(f"claim/{userns}/{name}", counts[f"claim/{userns}/{name}"] + 1, timeout=60)
    fresh_devcluster.request("PUT", "/_devcluster/faults", {"error_rate": 0})


def watch_errors() -> float:
    """Watch restarts after errors in this process, over all kinds (the informers' metric)."""
    total = 0.0
    for metric in WATCHER.collect():
        if metric.name == "poolboy_watcher_watch_restarts":
            total += sum(sample.value for sample in metric.samples
                         if sample.name.endswith("_total") and sample.labels.get("reason") == "error")
    return total


# --- watcher subprocesses ------------------------------------------------------------------------------------------


class WatcherProcess:
    """A watcher process recording its keys to a file (:func:`tests.integration.watcher_keys.main`)."""

    def __init__(self, cluster, tmp_path: Path, operator_namespace: str, identity: str, lease_seconds: float = 3,
                 watch_timeout: int = 2) -> None:
        self.keys_file = tmp_path / f"keys-{identity}.txt"
        self.log_file = tmp_path / f"watcher-{identity}.log"
        self.identity = identity
        env = {**os.environ, "POOLBOY_NAMESPACE": operator_namespace,
               "POOLBOY_WATCHER_LEASE_SECONDS": str(lease_seconds), "POOLBOY_API_TIMEOUT": "5",
               "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "tests.integration.watcher_keys", str(self.keys_file),
               "--kubeconfig", str(cluster.kubeconfig), "--identity", identity, "--watch-timeout", str(watch_timeout)]
        self._log = open(self.log_file, "a")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def keys(self) -> list[str]:
        return self.keys_file.read_text().split() if self.keys_file.exists() else []

    def count(self, key: str) -> int:
        return self.keys().count(key)

    def wait(self, key: str, at_least: int = 1, timeout: float = 20) -> None:
        wait_for(lambda: self.count(key) >= at_least, timeout=timeout,
                 message=f"{self.identity} recorded {key} x{at_least}; log: {self.log()[-1500:]}")

    def log(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    def signal(self, sig: int) -> None:
        os.kill(self.process.pid, sig)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log.close()


@pytest.fixture()
def processes() -> Iterator[list[WatcherProcess]]:
    started: list[WatcherProcess] = []
    yield started
    for process in started:
        process.stop()


def lease_holder(kube: KubeClient, namespace: str) -> str:
    lease = kube.get_or_none(LEASE_API, "Lease", "poolboy-watcher", namespace)
    return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""


def test_restart_loses_nothing(devcluster, kube, opns, userns, tmp_path, processes) -> None:
    first = WatcherProcess(devcluster, tmp_path, opns, "first")
    processes.append(first)
    kube.create(poolboy_obj("ResourceClaim", userns, "steady"))
    first.wait(f"claim/{userns}/steady")
    first.stop()
    assert first.process.returncode == 0, first.log()[-2000:]

    # while no watcher runs: a new claim, a status-only change and a new handle
    kube.create(poolboy_obj("ResourceClaim", userns, "while-down"))
    kube.patch_merge(API, "ResourceClaim", "steady", userns, {"status": {"summary": {"x": 1}}}, status=True)
    kube.create(poolboy_obj("ResourceHandle", opns, "guid-while-down"))
    second = WatcherProcess(devcluster, tmp_path, opns, "second")
    processes.append(second)
    for key in (f"claim/{userns}/while-down", f"claim/{userns}/steady", f"handle/{opns}/guid-while-down"):
        second.wait(key)


def test_leader_failover(devcluster, kube, opns, userns, tmp_path, processes) -> None:
    a = WatcherProcess(devcluster, tmp_path, opns, "a", lease_seconds=3)
    b = WatcherProcess(devcluster, tmp_path, opns, "b", lease_seconds=3)
    processes.extend([a, b])
    holder = wait_for(lambda: lease_holder(kube, opns), timeout=20, message="a leader")
    leader, standby = (a, b) if holder == "a" else (b, a)
    kube.create(poolboy_obj("ResourceClaim", userns, "one"))
    leader.wait(f"claim/{userns}/one")
    assert standby.count(f"claim/{userns}/one") == 0, "the standby must not enqueue"

    leader.signal(signal.SIGKILL)
    died = time.monotonic()
    leader.process.wait(5)
    wait_for(lambda: lease_holder(kube, opns) == standby.identity, timeout=15,
             message="standby takes the lease within 15 s")
    # a figure, not an assertion: with POOLBOY_WATCHER_LEASE_SECONDS=3 the election promises about 3 s
    print(f"takeover {time.monotonic() - died:.2f}s after SIGKILL (lease seconds 3)")
    kube.create(poolboy_obj("ResourceClaim", userns, "two"))
    standby.wait(f"claim/{userns}/two")
    standby.wait(f"claim/{userns}/one")  # the take-over lists everything again


def test_leader_steps_down_when_renewals_outlast_the_deadline(fresh_devcluster) -> None:
    """Renewals that still succeed, but only after the renew deadline, must not keep a leader leading: a standby
    judges expiry from when it saw the record, and may take over before such a renewal lands."""
    kube = KubeClient.from_settings(settings_for("op"), kubeconfig=str(fresh_devcluster.kubeconfig))
    opns = create_namespace(kube, "op")
    changes: list[str] = []
    elector = LeaderElector(kube, opns, "poolboy-watcher", "slow", lease_seconds=3,
                            on_started=lambda: changes.append("started"), on_stopped=lambda: changes.append("stopped"))
    thread = threading.Thread(target=elector.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: elector.is_leader, timeout=10, message="leadership")
        # every Lease request now takes longer than the whole renew deadline (2/3 of a 2 s lease)
        fresh_devcluster.request("PUT", "/_devcluster/faults", {"latency_ms": 2500, "kinds": ["leases"]})
        wait_for(lambda: not elector.is_leader, timeout=15, message="step-down while renewals are too slow")
        assert lease_holder(kube, opns) == "slow", "nobody else took the lease: the deadline alone ended it"
        fresh_devcluster.request("PUT", "/_devcluster/faults", {})
        wait_for(lambda: elector.is_leader, timeout=15, message="leadership again once renewals are fast")
        assert changes[:3] == ["started", "stopped", "started"]
    finally:
        fresh_devcluster.request("PUT", "/_devcluster/faults", {})
        elector.stop()
        thread.join(15)
        kube.close()
    assert not thread.is_alive(), "elector did not stop"


def test_gone_relists_without_missing_a_change(fresh_devcluster, tmp_path, processes) -> None:
    kube = KubeClient.from_settings(settings_for("op"), kubeconfig=str(fresh_devcluster.kubeconfig))
    opns, userns = create_namespace(kube, "op"), create_namespace(kube, "user")
    fresh_devcluster.request("PUT", "/_devcluster/history", {"size": 5})
    watcher = WatcherProcess(fresh_devcluster, tmp_path, opns, "w", watch_timeout=1)
    processes.append(watcher)
    kube.create(poolboy_obj("ResourceClaim", userns, "before"))
    watcher.wait(f"claim/{userns}/before")

    watcher.signal(signal.SIGSTOP)
    try:
        # the paused watcher's streams end at their 1 s timeout; only then change things, so that it must come
        # back with a resourceVersion that has fallen out of the 5-event history
        wait_for(lambda: fresh_devcluster.request("GET", "/_devcluster/state")["watchers"] == 0, timeout=15,
                 message="the paused watcher's streams closed by the server")
        for index in range(15):
            kube.create(poolboy_obj("ResourceClaim", userns, f"during-{index}"))
        kube.patch_merge(API, "ResourceClaim", "before", userns, {"status": {"n": 1}}, status=True)
        for index in range(10):
            kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": f"noise-{index}", "namespace": userns}})
    finally:
        watcher.signal(signal.SIGCONT)
    for index in range(15):
        watcher.wait(f"claim/{userns}/during-{index}")
    watcher.wait(f"claim/{userns}/before", 2)
    assert re.search(r"ResourceClaim\S* resourceVersion \d+ too old \(410\), re-listing", watcher.log()), \
        watcher.log()[-2000:]

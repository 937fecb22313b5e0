"""Events through ``KubeClient.events`` against devcluster over HTTP, read back with the official ``kubernetes``
client: identical occurrences are one Event with a count, other reasons are other Events, injected 500/429s are
retried until the Event arrives, an expired Event is created again, and a process that exits without flushing
still delivers what it emitted."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from poolboy import observability
from poolboy.kube import KubeClient, event_recorder
from poolboy.settings import Settings
from tests.waiting import wait_for


def make_kube(cluster) -> KubeClient:
    return KubeClient.from_settings(Settings.from_env(api_timeout=10.0), kubeconfig=str(cluster.kubeconfig))


@pytest.fixture()
def kube(devcluster) -> Iterator[KubeClient]:
    kube = make_kube(devcluster)
    yield kube
    kube.close()


def new_namespace(kube: KubeClient) -> str:
    name = f"ev-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def configmap(kube: KubeClient, namespace: str, name: str = "cm") -> dict:
    return kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}})


def events_about(cluster, namespace: str, name: str) -> list[Any]:
    """Events in ``namespace`` about ``name``, read with the official client (as ``kubectl describe`` would)."""
    api_client = cluster.api_client()
    try:
        items = client.CoreV1Api(api_client).list_namespaced_event(namespace).items
    finally:
        api_client.close()
    return [e for e in items if e.involved_object.name == name]


def event_requests(cluster, namespace: str) -> dict[str, int]:
    """Event requests the API server received for ``namespace``, by verb (failed ones included)."""
    counts: dict[str, int] = {}
    for item in cluster.counters()["items"]:
        if item["resource"] == "events" and item["namespace"] == namespace:
            counts[item["verb"]] = counts.get(item["verb"], 0) + item["count"]
    return counts


def test_identical_events_are_one_event_with_a_count(devcluster, kube: KubeClient) -> None:
    namespace = new_namespace(kube)
    obj = configmap(kube, namespace)
    for _ in range(20):
        kube.events.emit(obj, "Bound", "bound to handle h")
    assert event_recorder.flush(10)
    [event] = events_about(devcluster, namespace, "cm")
    assert (event.reason, event.message, event.count) == ("Bound", "bound to handle h", 20)
    assert event.involved_object.uid == obj["metadata"]["uid"]
    assert event.first_timestamp <= event.last_timestamp
    requests = event_requests(devcluster, namespace)
    assert requests.get("create") == 1 and requests.get("patch", 0) <= 19, requests


def test_different_reasons_are_separate_events(devcluster, kube: KubeClient) -> None:
    namespace = new_namespace(kube)
    obj = configmap(kube, namespace)
    kube.events.emit(obj, "Bound", "bound")
    kube.events.emit(obj, "ResourceCreated", "created", type="Normal")
    kube.events.emit(obj, "InvalidSpec", "bad", type="Warning")
    assert event_recorder.flush(10)
    found = {(e.reason, e.type, e.count) for e in events_about(devcluster, namespace, "cm")}
    assert found == {("Bound", "Normal", 1), ("ResourceCreated", "Normal", 1), ("InvalidSpec", "Warning", 1)}


def test_an_expired_event_is_created_again_with_the_count(devcluster, kube: KubeClient) -> None:
    namespace = new_namespace(kube)
    obj = configmap(kube, namespace)
    kube.events.emit(obj, "Bound", "bound")
    assert event_recorder.flush(10)
    [first] = events_about(devcluster, namespace, "cm")
    kube.delete("v1", "Event", first.metadata.name, namespace)  # as the API server's Event TTL would
    kube.events.emit(obj, "Bound", "bound")
    assert event_recorder.flush(10)
    [again] = events_about(devcluster, namespace, "cm")
    assert again.count == 2 and again.metadata.uid != first.metadata.uid


def test_injected_500_and_429_are_retried_until_the_event_arrives(fresh_devcluster) -> None:
    kube = make_kube(fresh_devcluster)
    seen: list[tuple[str, str]] = []
    callback = observability.on_event(lambda outcome, detail: seen.append((outcome, detail)))
    try:
        namespace = new_namespace(kube)
        obj = configmap(kube, namespace)
        fresh_devcluster.set_faults(error_rate=1.0, codes=[500, 429], retry_after=1, verbs=["create"],
                                    kinds=["events"])
        kube.events.emit(obj, "Bound", "bound while the API fails")  # returns at once: nothing waits for the API
        wait_for(lambda: event_requests(fresh_devcluster, namespace).get("create", 0) >= 2, timeout=20,
                 message="the Event's create attempted twice")
        assert events_about(fresh_devcluster, namespace, "cm") == []
        fresh_devcluster.clear_faults()
        assert event_recorder.flush(30)
        [event] = events_about(fresh_devcluster, namespace, "cm")
        assert (event.reason, event.count) == ("Bound", 1)
        assert ("sent", "create") in seen and not [s for s in seen if s[0] == "dropped"]
    finally:
        observability.remove_event_callback(callback)
        fresh_devcluster.clear_faults()
        kube.close()


EMIT_AND_EXIT = """
import sys
from poolboy.kube import KubeClient
from poolboy.settings import Settings
kube = KubeClient.from_settings(Settings.from_env(api_timeout=10.0), kubeconfig=sys.argv[1])
obj = kube.get("v1", "ConfigMap", "cm", sys.argv[2])
for _ in range(3):
    kube.events.emit(obj, "Exiting", "emitted just before exit")
# no flush, no close: the interpreter's exit must send them
"""


def test_a_process_exiting_without_flush_still_delivers_its_events(devcluster, kube: KubeClient) -> None:
    namespace = new_namespace(kube)
    configmap(kube, namespace)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", EMIT_AND_EXIT, str(devcluster.kubeconfig), namespace], cwd=root,
                   check=True, timeout=60)
    [event] = events_about(devcluster, namespace, "cm")
    assert (event.reason, event.count) == ("Exiting", 3)


@pytest.mark.slow
def test_a_stopping_worker_child_sends_its_queued_events(fresh_devcluster, redis_server, r, enqueuer) -> None:
    """A prefork child ends with ``os._exit`` (no atexit) about a second after it is told to stop: its
    ``worker_process_shutdown`` flush must send the Event it still owes. The API answers every Event create with
    429 and Retry-After 3 s until the worker has been told to stop, so the retry that succeeds comes after that
    second."""
    from stack.testing import WorkerProcess
    from tests.integration import engine_reconcilers as er
    from tests.integration.engine_settings import ENV, RECONCILERS

    kube = make_kube(fresh_devcluster)
    try:
        namespace = new_namespace(kube)
        key = f"claim/{namespace}/stopping"
        r.hset(f"behave:{key}", "event", "Stopping")
        fresh_devcluster.set_faults(error_rate=1.0, codes=[429], retry_after=3, verbs=["create"], kinds=["events"])
        with WorkerProcess(redis_server.url, ["claims"], 1, reconcilers=RECONCILERS, env=ENV,
                           kubeconfig=fresh_devcluster.kubeconfig) as worker:
            assert enqueuer.add(key) == "published"
            wait_for(lambda: er.completed(r, key) == 1, timeout=15, message="the run that emits the Event")
            wait_for(lambda: event_requests(fresh_devcluster, namespace).get("create", 0) >= 1, timeout=15,
                     message="a refused Event create")
            assert worker.process is not None
            worker.process.terminate()  # warm shutdown: the pool child flushes, then exits
            fresh_devcluster.clear_faults()
            worker.process.wait(20)
        [event] = events_about(fresh_devcluster, namespace, "stopping")
        assert event.reason == "Stopping" and event.message == f"emitted by a run of {key}"
    finally:
        fresh_devcluster.clear_faults()
        kube.close()

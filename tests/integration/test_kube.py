"""poolboy.kube against a real devcluster over HTTP: CRUD, typed errors, preconditions, discovery, paging, watch."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from poolboy import observability
from poolboy.kube import (
    AlreadyExists,
    ApiMissing,
    Conflict,
    Gone,
    Invalid,
    KubeClient,
    NotFound,
    conflict_policy,
)
from poolboy.settings import Settings
from tests.integration.manifests import crd
from tests.waiting import wait_for

D = "poolboy.gpte.redhat.com"


def make_kube(cluster, **overrides) -> KubeClient:
    settings = Settings.from_env(api_timeout=10.0, **overrides)
    return KubeClient.from_settings(settings, kubeconfig=str(cluster.kubeconfig))


@pytest.fixture()
def kube(devcluster) -> Iterator[KubeClient]:
    client = make_kube(devcluster)
    yield client
    client.close()


@pytest.fixture()
def namespace(kube: KubeClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def configmap(namespace: str, name: str, data: dict | None = None, **metadata) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, **metadata},
            "data": data or {}}


def claim(namespace: str, name: str) -> dict:
    return {"apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"resources": []}}


def test_core_crud(kube: KubeClient, namespace: str) -> None:
    created = kube.create(configmap(namespace, "one", {"a": "1"}))
    assert created["metadata"]["uid"] and created["data"] == {"a": "1"}
    got = kube.get("v1", "ConfigMap", "one", namespace)
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    got["data"]["b"] = "2"
    replaced = kube.replace(got)
    assert replaced["data"] == {"a": "1", "b": "2"}

    patched = kube.patch_merge("v1", "ConfigMap", "one", namespace, {"data": {"a": None, "c": "3"}})
    assert patched["data"] == {"b": "2", "c": "3"}

    patched = kube.patch_json("v1", "ConfigMap", "one", namespace,
                              [{"op": "test", "path": "/data/b", "value": "2"},
                               {"op": "replace", "path": "/data/b", "value": "22"}])
    assert patched["data"]["b"] == "22"

    kube.delete("v1", "ConfigMap", "one", namespace)
    with pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "one", namespace)
    assert kube.get_or_none("v1", "ConfigMap", "one", namespace) is None
    assert kube.delete_if_exists("v1", "ConfigMap", "one", namespace) is False
    with pytest.raises(NotFound):
        kube.delete("v1", "ConfigMap", "one", namespace)


def test_custom_kind_crud_and_status(kube: KubeClient, namespace: str) -> None:
    created = kube.create(claim(namespace, "c1"))
    assert created["apiVersion"] == f"{D}/v1" and created["kind"] == "ResourceClaim"
    created["status"] = {"summary": {"state": "x"}}
    with_status = kube.replace_status(created)
    assert with_status["status"]["summary"] == {"state": "x"}

    approval = {"status": {"approval": {"state": "approved"}}}
    patched = kube.patch_merge(f"{D}/v1", "ResourceClaim", "c1", namespace, approval,
                               resource_version=with_status["metadata"]["resourceVersion"], status=True)
    assert patched["status"]["approval"] == {"state": "approved"} and patched["status"]["summary"] == {"state": "x"}

    items = kube.list(f"{D}/v1", "ResourceClaim", namespace)
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in items] == [
        (f"{D}/v1", "ResourceClaim", "c1")]
    assert kube.delete_if_exists(f"{D}/v1", "ResourceClaim", "c1", namespace) is True


def test_cluster_scoped_kind(kube: KubeClient, namespace: str) -> None:
    info = kube.resource_info("v1", "Namespace")
    assert (info.plural, info.namespaced, info.group, info.version) == ("namespaces", False, "", "v1")
    assert kube.get("v1", "Namespace", namespace)["metadata"]["name"] == namespace
    assert namespace in {n["metadata"]["name"] for n in kube.list("v1", "Namespace")}
    claims = kube.resource_info(f"{D}/v1", "ResourceClaim")
    assert (claims.plural, claims.namespaced, claims.group) == ("resourceclaims", True, D)


def test_already_exists_is_not_conflict(kube: KubeClient, namespace: str) -> None:
    kube.create(configmap(namespace, "dup"))
    with pytest.raises(AlreadyExists) as error:
        kube.create(configmap(namespace, "dup"))
    assert error.value.status == 409 and not error.value.transient


def test_stale_resource_version_is_conflict(kube: KubeClient, namespace: str) -> None:
    first = kube.create(configmap(namespace, "cas", {"n": "0"}))
    kube.patch_merge("v1", "ConfigMap", "cas", namespace, {"data": {"n": "1"}})
    first["data"]["n"] = "stale"
    with pytest.raises(Conflict) as error:
        kube.replace(first)
    assert error.value.status == 409 and error.value.transient
    with pytest.raises(Conflict):
        kube.patch_merge("v1", "ConfigMap", "cas", namespace, {"data": {"n": "2"}},
                         resource_version=first["metadata"]["resourceVersion"])
    assert kube.get("v1", "ConfigMap", "cas", namespace)["data"]["n"] == "1"


def test_failed_json_patch_test_is_invalid(kube: KubeClient, namespace: str) -> None:
    kube.create(configmap(namespace, "jp", {"owner": "a"}))
    with pytest.raises(Invalid) as error:
        kube.patch_json("v1", "ConfigMap", "jp", namespace, [
            {"op": "test", "path": "/data/owner", "value": "b"},
            {"op": "replace", "path": "/data/owner", "value": "c"}])
    assert error.value.status == 422 and not error.value.transient
    assert kube.get("v1", "ConfigMap", "jp", namespace)["data"]["owner"] == "a"


def test_retry_on_conflict_rereads_and_wins(kube: KubeClient, namespace: str) -> None:
    kube.create(configmap(namespace, "counter", {"n": "0"}))
    attempts = []

    def increment() -> dict:
        current = kube.get("v1", "ConfigMap", "counter", namespace)
        attempts.append(current["metadata"]["resourceVersion"])
        if len(attempts) == 1:  # a competing writer sneaks in between our read and our write
            kube.patch_merge("v1", "ConfigMap", "counter", namespace, {"data": {"n": "10"}})
        current["data"]["n"] = str(int(current["data"]["n"]) + 1)
        return kube.replace(current)

    result = conflict_policy()(increment)
    assert len(attempts) == 2 and result["data"]["n"] == "11"


def test_retry_on_conflict_gives_up(kube: KubeClient, namespace: str) -> None:
    stale = kube.create(configmap(namespace, "hot", {"n": "0"}))
    kube.patch_merge("v1", "ConfigMap", "hot", namespace, {"data": {"n": "1"}})
    calls = []

    def always_stale() -> dict:
        calls.append(1)
        return kube.replace(stale)

    with pytest.raises(Conflict):
        conflict_policy(3)(always_stale)
    assert len(calls) == 3


def test_unknown_group_is_api_missing(kube: KubeClient) -> None:
    with pytest.raises(ApiMissing) as error:
        kube.resource_info("nothing.example.com/v1", "Thing")
    assert "nothing.example.com" in error.value.message and "v1" in error.value.message
    with pytest.raises(ApiMissing) as error:
        kube.get("v1", "NoSuchKind", "x", "default")
    assert "NoSuchKind" in error.value.message


def test_crd_created_at_runtime_is_discovered(kube: KubeClient, namespace: str) -> None:
    group = f"g{uuid.uuid4().hex[:6]}.example.com"
    with pytest.raises(ApiMissing):
        kube.resource_info(f"{group}/v1", "Widget")
    kube.create(crd(group, "Widget"))
    info = wait_for(lambda: kube.resource_info(f"{group}/v1", "Widget"), timeout=10, message="Widget discovered")
    assert info.plural == "widgets" and info.namespaced
    obj = kube.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                       "metadata": {"name": "w", "namespace": namespace}, "spec": {"size": 1}})
    assert kube.get(f"{group}/v1", "Widget", "w", namespace)["metadata"]["uid"] == obj["metadata"]["uid"]


def test_pagination(kube: KubeClient, namespace: str) -> None:
    for index in range(23):
        kube.create(configmap(namespace, f"p{index:02d}", labels={"set": "pages"}))
    kube.create(configmap(namespace, "other"))
    pages = list(kube.list_pages("v1", "ConfigMap", namespace, label_selector="set=pages", limit=10))
    assert [len(page) for page in pages] == [10, 10, 3]
    names = [item["metadata"]["name"] for page in pages for item in page]
    assert sorted(names) == [f"p{index:02d}" for index in range(23)]
    assert all(item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for page in pages for item in page)
    items, version = kube.list_with_version("v1", "ConfigMap", namespace, label_selector="set=pages", limit=7)
    assert len(items) == 23 and version


def test_watch_from_list_version(kube: KubeClient, namespace: str) -> None:
    kube.create(configmap(namespace, "before"))
    items, version = kube.list_with_version("v1", "ConfigMap", namespace)
    assert [i["metadata"]["name"] for i in items if i["metadata"]["name"] == "before"] == ["before"]
    kube.create(configmap(namespace, "after"))
    kube.patch_merge("v1", "ConfigMap", "after", namespace, {"data": {"x": "1"}})
    kube.delete("v1", "ConfigMap", "before", namespace)
    seen = []
    for event in kube.watch("v1", "ConfigMap", namespace, resource_version=version, timeout_seconds=2):
        if event["type"] != "BOOKMARK":
            seen.append((event["type"], event["object"]["metadata"]["name"]))
        if len(seen) == 3:
            break
    assert seen == [("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "before")]


def test_watch_interrupted_from_another_thread(kube: KubeClient, namespace: str) -> None:
    streams = []
    done = threading.Event()

    def consume() -> None:
        try:
            for _ in kube.watch("v1", "ConfigMap", namespace, timeout_seconds=60, on_stream=streams.append):
                pass
        except Exception:
            pass
        done.set()

    threading.Thread(target=consume, daemon=True).start()
    wait_for(lambda: streams, timeout=5, message="watch stream open")
    streams[0].shutdown()
    assert done.wait(5), "a shut-down stream must end the watch long before its 60 s timeout"


def test_watch_with_expired_version_is_gone(fresh_devcluster) -> None:
    kube = make_kube(fresh_devcluster)
    fresh_devcluster.request("PUT", "/_devcluster/history", {"size": 5})
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
    _, version = kube.list_with_version("v1", "ConfigMap", "gone")
    for index in range(20):
        kube.create(configmap("gone", f"c{index}"))
    with pytest.raises(Gone) as error:
        for _ in kube.watch("v1", "ConfigMap", "gone", resource_version=version, timeout_seconds=2):
            pass
    assert error.value.status == 410


def test_the_clients_events_reach_the_api(kube: KubeClient, namespace: str) -> None:
    obj = kube.create(claim(namespace, "ev"))
    kube.events.emit(obj, "Bound", "bound to handle h", type="Normal")
    events = wait_for(lambda: [e for e in kube.list("v1", "Event", namespace)
                               if e["involvedObject"].get("name") == "ev"], timeout=5, message="event")
    assert events[0]["reason"] == "Bound" and events[0]["involvedObject"]["uid"] == obj["metadata"]["uid"]
    # cluster-scoped objects get their events in the operator namespace; a failure is logged, never raised
    kube.events.emit({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, "X", "y")
    broken = make_kube_with_namespace(kube, f"missing-{uuid.uuid4().hex[:6]}")
    broken.events.emit({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, "X", "y")


def make_kube_with_namespace(kube: KubeClient, namespace: str) -> KubeClient:
    return KubeClient(kube.api_client, Settings.from_env(operator_namespace=namespace))


def test_api_request_hook(kube: KubeClient, namespace: str) -> None:
    seen: list[tuple[str, int]] = []
    callback = observability.on_api_request(lambda method, code: seen.append((method, code)))
    try:
        kube.get_or_none("v1", "ConfigMap", "absent", namespace)
        kube.create(configmap(namespace, "present"))
    finally:
        observability.remove_api_request_callback(callback)
    assert ("GET", 404) in seen and ("POST", 201) in seen

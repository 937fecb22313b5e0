"""The devcluster admin API: fault injection, request counters and watch-history size.

These knobs let integration tests prove that Poolboy retries transient errors, honours Retry-After, and makes
the number of API calls it should — things a real cluster cannot be made to do on demand.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from devcluster.testing import DevCluster
from tests.devcluster.kube import MERGE, no_retry_client, status_of, unique
from tests.devcluster.watching import replay


@pytest.fixture()
def fresh(fresh_devcluster: DevCluster) -> Iterator[tuple[DevCluster, client.CoreV1Api, str]]:
    """A private server, a client for it, and a namespace in it."""
    api_client = no_retry_client(fresh_devcluster.kubeconfig)
    core = client.CoreV1Api(api_client)
    namespace = unique("ns")
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}})
    yield fresh_devcluster, core, namespace
    fresh_devcluster.request("PUT", "/_devcluster/faults", {})
    api_client.close()


def failure(call: Any, *args: Any, **kwargs: Any) -> ApiException | None:
    try:
        call(*args, **kwargs)
    except ApiException as error:
        return error
    return None


def test_error_rate_one_fails_every_request_with_500(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("PUT", "/_devcluster/faults", {"error_rate": 1.0, "codes": [500], "retry_after": 1,
                                                   "latency_ms": 0})
    for call, args in ((core.read_namespaced_config_map, ("cm", namespace)),
                       (core.list_namespaced_config_map, (namespace,)),
                       (core.create_namespaced_config_map, (namespace, {"metadata": {"name": "new"}}))):
        for _ in range(3):
            error = failure(call, *args)
            assert error is not None and error.status == 500, "request was not faulted"
            body = status_of(error)
            assert (body["code"], body["status"], body["reason"]) == (500, "Failure", "InternalError")
    cluster.request("PUT", "/_devcluster/faults", {})
    assert core.read_namespaced_config_map("cm", namespace).metadata.name == "cm"
    assert failure(core.read_namespaced_config_map, "new", namespace).status == 404, "a faulted create took effect"


def test_after_commit_stores_the_write_and_answers_the_error(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("PUT", "/_devcluster/faults", {"error_rate": 1.0, "codes": [503], "verbs": ["create", "patch"],
                                                   "kinds": ["configmaps"], "after_commit": True})
    created = failure(core.create_namespaced_config_map, namespace, {"metadata": {"name": "new"}})
    assert created is not None and created.status == 503, "the client was not told the create failed"
    patched = failure(core.patch_namespaced_config_map, "cm", namespace, {"data": {"a": "1"}}, _content_type=MERGE)
    assert patched is not None and patched.status == 503
    again = failure(core.create_namespaced_config_map, namespace, {"metadata": {"name": "new"}})
    assert again is not None and again.status == 409 and status_of(again)["reason"] == "AlreadyExists", \
        "a request that fails on its own is answered with its own error"
    cluster.request("PUT", "/_devcluster/faults", {})
    assert core.read_namespaced_config_map("new", namespace).metadata.name == "new", "the create was not stored"
    assert core.read_namespaced_config_map("cm", namespace).data == {"a": "1"}, "the patch was not stored"


def test_injected_429_carries_retry_after(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("PUT", "/_devcluster/faults", {"error_rate": 1.0, "codes": [429], "retry_after": 2})
    error = failure(core.read_namespaced_config_map, "cm", namespace)
    assert error is not None and error.status == 429
    assert error.headers["Retry-After"] == "2"
    body = status_of(error)
    assert body["reason"] == "TooManyRequests"
    assert body["details"]["retryAfterSeconds"] == 2


def test_injected_409_is_a_conflict_status(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("PUT", "/_devcluster/faults", {"error_rate": 1.0, "codes": [409]})
    error = failure(core.patch_namespaced_config_map, "cm", namespace, {"data": {"a": "1"}}, _content_type=MERGE)
    assert error is not None and error.status == 409
    assert status_of(error)["reason"] == "Conflict"
    cluster.request("PUT", "/_devcluster/faults", {})
    assert core.read_namespaced_config_map("cm", namespace).data is None, "a faulted patch took effect"


def test_partial_error_rate_fails_some_requests(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("PUT", "/_devcluster/faults", {"error_rate": 0.5, "codes": [500, 429]})
    outcomes = [failure(core.read_namespaced_config_map, "cm", namespace) for _ in range(60)]
    codes = {error.status for error in outcomes if error is not None}
    successes = sum(1 for error in outcomes if error is None)
    assert 0 < successes < 60
    assert codes <= {500, 429} and codes


def test_injected_latency_delays_requests(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("PUT", "/_devcluster/faults", {"error_rate": 0.0, "latency_ms": 400})
    began = time.monotonic()
    core.read_namespaced_config_map("cm", namespace)
    assert time.monotonic() - began >= 0.4
    cluster.request("PUT", "/_devcluster/faults", {})
    core.read_namespaced_config_map("cm", namespace)


def count(counters: dict[str, Any], verb: str, resource: str, namespace: str) -> int:
    return sum(item["count"] for item in counters["items"]
               if (item["verb"], item["resource"], item["namespace"]) == (verb, resource, namespace))


def test_counters_increase_by_verb_resource_and_namespace(devcluster: DevCluster, core: client.CoreV1Api,
                                                          namespace: str) -> None:
    before = devcluster.request("GET", "/_devcluster/counters")
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "b"}})
    for _ in range(3):
        core.read_namespaced_config_map("a", namespace)
    core.list_namespaced_config_map(namespace)
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "v"}}, _content_type=MERGE)
    core.replace_namespaced_config_map("b", namespace, {"metadata": {"name": "b"}, "data": {"k": "v"}})
    core.delete_namespaced_config_map("b", namespace)
    core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}})
    after = devcluster.request("GET", "/_devcluster/counters")
    expected = {("create", "configmaps"): 2, ("get", "configmaps"): 3, ("list", "configmaps"): 1,
                ("patch", "configmaps"): 1, ("update", "configmaps"): 1, ("delete", "configmaps"): 1,
                ("create", "secrets"): 1, ("get", "secrets"): 0}
    for (verb, resource), increment in expected.items():
        delta = count(after, verb, resource, namespace) - count(before, verb, resource, namespace)
        assert delta == increment, f"{verb} {resource}: {delta} != {increment}"
    assert after["total"] - before["total"] >= 10


def test_counters_count_requests_per_named_object(devcluster: DevCluster, core: client.CoreV1Api,
                                                  namespace: str) -> None:
    def requests_on(name: str) -> int:
        counters = devcluster.request("GET", "/_devcluster/counters")
        return sum(item["count"] for item in counters["objects"]
                   if (item["resource"], item["namespace"], item["name"]) == ("configmaps", namespace, name))

    core.create_namespaced_config_map(namespace, {"metadata": {"name": "named"}})
    before = requests_on("named")
    core.read_namespaced_config_map("named", namespace)
    core.patch_namespaced_config_map("named", namespace, {"data": {"k": "v"}}, _content_type=MERGE)
    core.list_namespaced_config_map(namespace)  # names no object
    assert requests_on("named") - before == 2


def test_deeply_nested_objects_are_served_in_gets_lists_and_patches(devcluster: DevCluster,
                                                                    core: client.CoreV1Api,
                                                                    namespace: str) -> None:
    nested: Any = "leaf"
    for _ in range(400):  # deeper than orjson's 255 levels and than the default recursion limit allows, two a level
        nested = {"a": nested}
    custom = client.CustomObjectsApi(core.api_client)
    body = {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
            "metadata": {"name": "deep", "namespace": namespace},
            "spec": {"resources": [{"template": {"data": nested}}]}}
    created = devcluster.request("POST", f"/apis/poolboy.gpte.redhat.com/v1/namespaces/{namespace}/resourceclaims",
                                 body)
    assert created["metadata"]["name"] == "deep"
    custom.patch_namespaced_custom_object("poolboy.gpte.redhat.com", "v1", namespace, "resourceclaims", "deep",
                                          {"metadata": {"labels": {"x": "y"}}})
    listed = devcluster.request("GET", f"/apis/poolboy.gpte.redhat.com/v1/namespaces/{namespace}/resourceclaims")
    depth, node = 0, listed["items"][0]["spec"]["resources"][0]["template"]["data"]
    while isinstance(node, dict):
        depth, node = depth + 1, node["a"]
    assert (depth, node) == (400, "leaf")


def test_counters_count_watches_and_reset(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("POST", "/_devcluster/counters/reset")
    assert cluster.request("GET", "/_devcluster/counters")["total"] == 0
    replay(core.list_namespaced_config_map, namespace, count=1, timeout_seconds=1,
           resource_version=core.list_namespaced_config_map(namespace).metadata.resource_version)
    counters = cluster.request("GET", "/_devcluster/counters")
    assert count(counters, "watch", "configmaps", namespace) == 1
    assert count(counters, "list", "configmaps", namespace) == 1


def test_history_size_bounds_watch_resumption(fresh: tuple[DevCluster, client.CoreV1Api, str]) -> None:
    cluster, core, namespace = fresh
    cluster.request("PUT", "/_devcluster/history", {"size": 4})
    oldest = core.list_namespaced_config_map(namespace).metadata.resource_version
    for i in range(10):
        core.patch_namespaced_config_map("cm", namespace, {"data": {"i": str(i)}}, _content_type=MERGE)
    recent = core.read_namespaced_config_map("cm", namespace).metadata.resource_version
    core.patch_namespaced_config_map("cm", namespace, {"data": {"i": "last"}}, _content_type=MERGE)
    events = replay(core.list_namespaced_config_map, namespace, count=1, resource_version=recent)
    assert [(kind, obj["data"]["i"]) for kind, obj in events] == [("MODIFIED", "last")]
    try:
        old = replay(core.list_namespaced_config_map, namespace, count=1, resource_version=oldest)
    except ApiException as error:
        assert error.status == 410
    else:
        assert [kind for kind, _ in old] == ["ERROR"] and old[0][1]["code"] == 410, old

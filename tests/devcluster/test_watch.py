"""Watch semantics the watcher process depends on: ordering, resumption, bookmarks, selectors and expiry."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from devcluster.testing import DevCluster
from tests.devcluster.kube import MERGE, Crd, Objects, raw, unique
from tests.devcluster.watching import Watcher, replay, resource_versions, summary
from tests.waiting import wait_for


@pytest.fixture()
def watch_api(devcluster: DevCluster) -> Iterator[client.ApiClient]:
    """A client of its own for watch streams, so long-lived connections never starve the shared pool."""
    api_client = devcluster.api_client()
    yield api_client
    api_client.close()


def list_rv(core: client.CoreV1Api, namespace: str) -> str:
    return core.list_namespaced_config_map(namespace).metadata.resource_version


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def test_events_after_resource_version_in_order(core: client.CoreV1Api, watch_api: client.ApiClient,
                                                namespace: str) -> None:
    start = list_rv(core, namespace)
    core.create_namespaced_config_map(namespace, {**cm("x"), "data": {"v": "1"}})
    core.patch_namespaced_config_map("x", namespace, {"data": {"v": "2"}}, _content_type=MERGE)
    core.delete_namespaced_config_map("x", namespace)
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=3,
                    resource_version=start)
    assert summary(events) == [("ADDED", "x"), ("MODIFIED", "x"), ("DELETED", "x")]
    assert [obj.get("data") for _, obj in events] == [{"v": "1"}, {"v": "2"}, {"v": "2"}]
    versions = resource_versions(events)
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert all(obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1" for _, obj in events)


def test_watch_from_current_resource_version_sends_only_new_events(core: client.CoreV1Api,
                                                                   watch_api: client.ApiClient,
                                                                   namespace: str) -> None:
    core.create_namespaced_config_map(namespace, cm("old"))
    start = list_rv(core, namespace)
    watcher = Watcher(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, resource_version=start)
    try:
        core.create_namespaced_config_map(namespace, cm("new"))
        wait_for(lambda: watcher.events, timeout=5, message="event for the new configmap")
        assert summary(watcher.events) == [("ADDED", "new")]
    finally:
        watcher.stop()


def test_live_custom_resource_events(api: client.ApiClient, watch_api: client.ApiClient, widgets: Crd,
                                     namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    start = objects.list()["metadata"]["resourceVersion"]
    watcher = Watcher(client.CustomObjectsApi(watch_api).list_namespaced_custom_object, widgets.group,
                      widgets.version, namespace, widgets.plural, resource_version=start)
    try:
        objects.create(widgets.body("w", {"n": 1}))
        objects.patch("w", {"spec": {"n": 2}})
        objects.patch_status("w", {"status": {"phase": "Ready"}})
        objects.delete("w")
        wait_for(lambda: len(watcher.events) >= 4, timeout=5, message="four events")
        assert summary(watcher.events) == [("ADDED", "w"), ("MODIFIED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
        assert watcher.events[2][1]["status"] == {"phase": "Ready"}
        assert watcher.events[0][1]["kind"] == widgets.kind
    finally:
        watcher.stop()


def test_namespaced_watch_ignores_other_namespaces(core: client.CoreV1Api, watch_api: client.ApiClient,
                                                   namespace: str) -> None:
    other = unique("ns")
    core.create_namespace({"metadata": {"name": other}})
    try:
        start = list_rv(core, namespace)
        core.create_namespaced_config_map(other, cm("elsewhere"))
        core.create_namespaced_config_map(namespace, cm("here"))
        events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=1,
                        resource_version=start)
        assert summary(events) == [("ADDED", "here")]
    finally:
        core.delete_namespace(other)


def test_cluster_wide_watch_sees_all_namespaces(core: client.CoreV1Api, watch_api: client.ApiClient,
                                                namespace: str) -> None:
    other = unique("ns")
    core.create_namespace({"metadata": {"name": other}})
    tag = unique("tag")
    try:
        start = core.list_config_map_for_all_namespaces(limit=1).metadata.resource_version
        core.create_namespaced_config_map(namespace, cm("a", tag=tag))
        core.create_namespaced_config_map(other, cm("b", tag=tag))
        events = replay(client.CoreV1Api(watch_api).list_config_map_for_all_namespaces, count=2,
                        resource_version=start, label_selector=f"tag={tag}")
        assert [(kind, obj["metadata"]["namespace"]) for kind, obj in events] == [
            ("ADDED", namespace), ("ADDED", other)]
    finally:
        core.delete_namespace(other)


def test_cluster_wide_custom_resource_watch(api: client.ApiClient, watch_api: client.ApiClient, widgets: Crd,
                                            namespace: str) -> None:
    start = Objects(api, widgets, namespace).list()["metadata"]["resourceVersion"]
    tag = unique("tag")
    Objects(api, widgets, namespace).create(widgets.body("c", labels={"tag": tag}))
    events = replay(client.CustomObjectsApi(watch_api).list_custom_object_for_all_namespaces, widgets.group,
                    widgets.version, widgets.plural, count=1, resource_version=start, label_selector=f"tag={tag}")
    assert summary(events) == [("ADDED", "c")]


@pytest.mark.parametrize("resource_version", [None, "0"])
def test_watch_without_resource_version_starts_with_synthetic_added(core: client.CoreV1Api,
                                                                    watch_api: client.ApiClient, namespace: str,
                                                                    resource_version: str | None) -> None:
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map(namespace, cm(name, set="x"))
    core.patch_namespaced_config_map("b", namespace, {"data": {"k": "v"}}, _content_type=MERGE)
    kwargs = {"resource_version": resource_version} if resource_version is not None else {}
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=3,
                    label_selector="set=x", **kwargs)
    assert sorted(summary(events)) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
    assert next(obj for _, obj in events if obj["metadata"]["name"] == "b")["data"] == {"k": "v"}


def test_allow_watch_bookmarks_yields_bookmark(core: client.CoreV1Api, watch_api: client.ApiClient,
                                               namespace: str) -> None:
    core.create_namespaced_config_map(namespace, cm("a"))
    start = list_rv(core, namespace)
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=1,
                    timeout_seconds=4, include_bookmarks=True, resource_version=start, allow_watch_bookmarks=True)
    assert [kind for kind, _ in events] == ["BOOKMARK"]
    bookmark = events[0][1]
    assert bookmark["kind"] == "ConfigMap"
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(start)


def test_send_initial_events_ends_with_annotated_bookmark(core: client.CoreV1Api, watch_api: client.ApiClient,
                                                          namespace: str) -> None:
    for name in ("a", "b"):
        core.create_namespaced_config_map(namespace, cm(name, set="x"))
    watcher = Watcher(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, label_selector="set=x",
                      send_initial_events=True, resource_version_match="NotOlderThan", allow_watch_bookmarks=True)
    try:
        wait_for(lambda: watcher.of_type("BOOKMARK"), timeout=5, message="initial-events-end bookmark")
        events = list(watcher.events)
        end = next(i for i, (kind, _) in enumerate(events) if kind == "BOOKMARK")
        assert sorted(summary(events[:end])) == [("ADDED", "a"), ("ADDED", "b")]
        bookmark = events[end][1]
        assert bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
        assert int(bookmark["metadata"]["resourceVersion"]) >= max(resource_versions(events[:end]))
        core.create_namespaced_config_map(namespace, cm("c", set="x"))
        wait_for(lambda: ("ADDED", "c") in summary(watcher.events), timeout=5, message="live event after bookmark")
    finally:
        watcher.stop()


def test_timeout_seconds_ends_the_stream(core: client.CoreV1Api, watch_api: client.ApiClient,
                                         namespace: str) -> None:
    began = time.monotonic()
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=1, timeout_seconds=1,
                    resource_version=list_rv(core, namespace))
    assert events == []
    assert time.monotonic() - began < 8, "the server did not end the watch at timeoutSeconds"


def test_label_selector_filters_events(core: client.CoreV1Api, watch_api: client.ApiClient,
                                       namespace: str) -> None:
    start = list_rv(core, namespace)
    core.create_namespaced_config_map(namespace, cm("blue", color="blue"))
    core.create_namespaced_config_map(namespace, cm("red", color="red"))
    core.delete_namespaced_config_map("blue", namespace)
    core.delete_namespaced_config_map("red", namespace)
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=2,
                    resource_version=start, label_selector="color=red")
    assert summary(events) == [("ADDED", "red"), ("DELETED", "red")]


def test_label_changes_across_selector_become_added_and_deleted(core: client.CoreV1Api,
                                                                watch_api: client.ApiClient,
                                                                namespace: str) -> None:
    start = list_rv(core, namespace)
    core.create_namespaced_config_map(namespace, cm("a", color="red"))
    core.create_namespaced_config_map(namespace, cm("b", color="blue"))
    core.patch_namespaced_config_map("b", namespace, {"metadata": {"labels": {"color": "red"}}}, _content_type=MERGE)
    core.patch_namespaced_config_map("a", namespace, {"metadata": {"labels": {"color": "blue"}}},
                                     _content_type=MERGE)
    core.patch_namespaced_config_map("a", namespace, {"data": {"ignored": "yes"}}, _content_type=MERGE)
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=3,
                    resource_version=start, label_selector="color=red")
    assert summary(events) == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]


def test_field_selector_filters_events(core: client.CoreV1Api, watch_api: client.ApiClient,
                                       namespace: str) -> None:
    start = list_rv(core, namespace)
    for name in ("one", "two"):
        core.create_namespaced_config_map(namespace, cm(name))
        core.patch_namespaced_config_map(name, namespace, {"data": {"k": "v"}}, _content_type=MERGE)
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=2,
                    resource_version=start, field_selector="metadata.name=two")
    assert summary(events) == [("ADDED", "two"), ("MODIFIED", "two")]


def test_no_op_write_sends_no_event(core: client.CoreV1Api, watch_api: client.ApiClient, namespace: str) -> None:
    start = list_rv(core, namespace)
    core.create_namespaced_config_map(namespace, {**cm("a"), "data": {"k": "v"}})
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "v"}}, _content_type=MERGE)
    core.create_namespaced_config_map(namespace, cm("marker"))
    events = replay(client.CoreV1Api(watch_api).list_namespaced_config_map, namespace, count=2,
                    resource_version=start)
    assert summary(events) == [("ADDED", "a"), ("ADDED", "marker")]


def expired(events_or_error: Any) -> bool:
    """True for either form of 'too old resourceVersion' the client can surface."""
    if isinstance(events_or_error, ApiException):
        return events_or_error.status == 410
    return any(kind == "ERROR" and obj.get("code") == 410 for kind, obj in events_or_error)


def test_resource_version_older_than_history_is_410(fresh_devcluster: DevCluster) -> None:
    fresh_devcluster.request("PUT", "/_devcluster/history", {"size": 5})
    api_client = fresh_devcluster.api_client()
    try:
        core = client.CoreV1Api(api_client)
        ns = unique("ns")
        core.create_namespace({"metadata": {"name": ns}})
        start = core.create_namespaced_config_map(ns, cm("churn")).metadata.resource_version
        for i in range(20):
            core.patch_namespaced_config_map("churn", ns, {"data": {"i": str(i)}}, _content_type=MERGE)
        try:
            outcome: Any = replay(core.list_namespaced_config_map, ns, count=1, resource_version=start)
        except ApiException as error:
            outcome = error
        assert expired(outcome), outcome

        status, _, body = raw(api_client, "GET", f"/api/v1/namespaces/{ns}/configmaps",
                              query=[("watch", "true"), ("resourceVersion", start), ("timeoutSeconds", 1)])
        if status == 200:
            first = body if isinstance(body, dict) else json.loads(body.splitlines()[0])
            assert first["type"] == "ERROR" and first["object"]["code"] == 410, body
            assert first["object"]["reason"] in ("Expired", "Gone"), first
        else:
            assert status == 410, body

        recent = core.list_namespaced_config_map(ns).metadata.resource_version
        assert replay(core.list_namespaced_config_map, ns, count=1, timeout_seconds=1, resource_version=recent) == []
    finally:
        api_client.close()


def test_finalized_deletion_is_modified_then_deleted(api: client.ApiClient, watch_api: client.ApiClient,
                                                     widgets: Crd, namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    start = objects.list()["metadata"]["resourceVersion"]
    objects.create(widgets.body("f", finalizers=["conformance.test/hold"]))
    objects.delete("f")
    objects.patch("f", {"metadata": {"finalizers": None}})
    events = replay(client.CustomObjectsApi(watch_api).list_namespaced_custom_object, widgets.group,
                    widgets.version, namespace, widgets.plural, count=3, resource_version=start)
    assert summary(events) == [("ADDED", "f"), ("MODIFIED", "f"), ("DELETED", "f")]
    assert events[1][1]["metadata"]["deletionTimestamp"]
    assert events[2][1]["metadata"]["deletionTimestamp"] and not events[2][1]["metadata"].get("finalizers")

"""Get and list: NotFound bodies, list envelopes, label and field selectors, limit/continue, cluster-wide lists."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.devcluster.kube import Crd, Objects, expect_error, names, raw_ok, unique

LABELS: dict[str, dict[str, str]] = {
    "a": {"app": "web", "tier": "front"},
    "b": {"app": "web", "tier": "back"},
    "c": {"app": "db", "tier": "back"},
    "d": {"app": "db"},
    "e": {},
}


@pytest.fixture()
def labelled(core: client.CoreV1Api, namespace: str) -> str:
    for name, labels in LABELS.items():
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": {"set": "x", **labels}}})
    return namespace


def test_get_missing_is_404_not_found_status(core: client.CoreV1Api, namespace: str) -> None:
    body = expect_error(404, core.read_namespaced_config_map, "absent", namespace)
    assert body["reason"] == "NotFound"
    assert body["details"] == {"name": "absent", "kind": "configmaps"}
    assert body["message"] == 'configmaps "absent" not found'
    assert (body["apiVersion"], body["kind"]) == ("v1", "Status")


def test_get_missing_custom_resource_is_404(api: client.ApiClient, widgets: Crd, namespace: str) -> None:
    body = expect_error(404, Objects(api, widgets, namespace).get, "absent")
    assert body["reason"] == "NotFound"
    assert body["details"] == {"name": "absent", "group": widgets.group, "kind": widgets.plural}


def test_list_envelope_has_kind_and_resource_version(api: client.ApiClient, labelled: str) -> None:
    body = raw_ok(api, "GET", f"/api/v1/namespaces/{labelled}/configmaps")
    assert (body["kind"], body["apiVersion"]) == ("ConfigMapList", "v1")
    assert body["metadata"]["resourceVersion"]
    assert set(LABELS) <= names(body["items"])


def test_list_resource_version_advances_with_writes(core: client.CoreV1Api, namespace: str) -> None:
    before = core.list_namespaced_config_map(namespace).metadata.resource_version
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "new"}})
    after = core.list_namespaced_config_map(namespace).metadata.resource_version
    assert int(after) >= int(created.metadata.resource_version) > int(before)


def test_custom_resource_list_envelope(api: client.ApiClient, widgets: Crd, namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    objects.create(widgets.body("one"))
    listed = objects.list()
    assert (listed["kind"], listed["apiVersion"]) == (f"{widgets.kind}List", widgets.api_version)
    assert listed["metadata"]["resourceVersion"]
    assert listed["items"][0]["kind"] == widgets.kind and listed["items"][0]["apiVersion"] == widgets.api_version


@pytest.mark.parametrize(("selector", "expected"), [
    ("app=web", {"a", "b"}),
    ("app==web", {"a", "b"}),
    ("app!=web", {"c", "d", "e"}),
    ("tier in (front,back)", {"a", "b", "c"}),
    ("tier notin (front)", {"b", "c", "d", "e"}),
    ("tier", {"a", "b", "c"}),
    ("!tier", {"d", "e"}),
    ("app=db,tier=back", {"c"}),
    ("app in (web,db),!tier", {"d"}),
    ("app=web,tier!=front", {"b"}),
    ("app=nothing", set()),
])
def test_label_selectors(core: client.CoreV1Api, labelled: str, selector: str, expected: set[str]) -> None:
    listed = core.list_namespaced_config_map(labelled, label_selector=f"set=x,{selector}").items
    assert names(listed) == expected


def test_label_selector_on_custom_resources(api: client.ApiClient, widgets: Crd, namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    objects.create(widgets.body("red", labels={"color": "red"}))
    objects.create(widgets.body("blue", labels={"color": "blue"}))
    assert names(objects.list(label_selector="color=red")["items"]) == {"red"}
    assert names(objects.list(label_selector="color notin (red)")["items"]) == {"blue"}


def test_field_selector_metadata_name(core: client.CoreV1Api, labelled: str) -> None:
    assert names(core.list_namespaced_config_map(labelled, field_selector="metadata.name=b").items) == {"b"}
    others = core.list_namespaced_config_map(labelled, field_selector="metadata.name!=b", label_selector="set=x")
    assert names(others.items) == {"a", "c", "d", "e"}


def test_field_selector_metadata_namespace_cluster_wide(core: client.CoreV1Api, labelled: str) -> None:
    listed = core.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={labelled}",
                                                     label_selector="set=x").items
    assert names(listed) == set(LABELS)
    assert {item.metadata.namespace for item in listed} == {labelled}


def test_field_selector_on_custom_resources(api: client.ApiClient, widgets: Crd, namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    for name in ("p", "q"):
        objects.create(widgets.body(name))
    assert names(objects.list(field_selector="metadata.name=q")["items"]) == {"q"}


def test_unsupported_field_selector_is_400(core: client.CoreV1Api, namespace: str) -> None:
    body = expect_error(400, core.list_namespaced_config_map, namespace, field_selector="data.colour=red")
    assert body["reason"] == "BadRequest"


def paginate(list_page: Any, limit: int) -> tuple[list[str], int]:
    """Follow ``continue`` tokens to the end; return the names seen (in order) and the number of pages."""
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page = list_page(limit=limit, _continue=token) if token else list_page(limit=limit)
        pages += 1
        assert len(page["items"]) <= limit
        seen += [item["metadata"]["name"] for item in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            return seen, pages
        assert pages < 100, "pagination does not terminate"


def test_limit_and_continue_cover_every_item_exactly_once(api: client.ApiClient, widgets: Crd,
                                                          namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    expected = [f"w-{i:02d}" for i in range(11)]
    for name in expected:
        objects.create(widgets.body(name))
    seen, pages = paginate(objects.list, limit=3)
    assert sorted(seen) == expected
    assert pages == 4
    assert objects.list(limit=3)["metadata"]["remainingItemCount"] == 8


def test_limit_and_continue_with_label_selector(api: client.ApiClient, core: client.CoreV1Api,
                                                namespace: str) -> None:
    expected = {f"cm-{i:02d}" for i in range(7)}
    for name in expected | {"other"}:
        labels = {"page": "me"} if name != "other" else {}
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": labels}})
    path = f"/api/v1/namespaces/{namespace}/configmaps"

    def list_page(limit: int, _continue: str | None = None) -> Any:
        query: list[tuple[str, Any]] = [("labelSelector", "page=me"), ("limit", limit)]
        if _continue:
            query.append(("continue", _continue))
        return raw_ok(api, "GET", path, query=query)

    seen, _ = paginate(list_page, limit=2)
    assert sorted(seen) == sorted(expected)
    # With a selector the server cannot know how many items remain, so it leaves the count out.
    assert "remainingItemCount" not in list_page(2)["metadata"]


def test_continue_is_a_consistent_snapshot(api: client.ApiClient, widgets: Crd, namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    for i in range(6):
        objects.create(widgets.body(f"w{i}"))
    first = objects.list(limit=3)
    objects.create(widgets.body("w9-late"))
    rest = objects.list(limit=10, _continue=first["metadata"]["continue"])
    seen = [item["metadata"]["name"] for item in first["items"] + rest["items"]]
    assert sorted(seen) == [f"w{i}" for i in range(6)]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_cluster_wide_list_spans_namespaces(core: client.CoreV1Api, namespace: str) -> None:
    other = unique("ns")
    core.create_namespace({"metadata": {"name": other}})
    try:
        tag = unique("tag")
        for ns in (namespace, other):
            core.create_namespaced_config_map(ns, {"metadata": {"name": "same", "labels": {"tag": tag}}})
        listed = core.list_config_map_for_all_namespaces(label_selector=f"tag={tag}").items
        assert sorted(item.metadata.namespace for item in listed) == sorted([namespace, other])
    finally:
        core.delete_namespace(other)


def test_cluster_wide_custom_resource_list(api: client.ApiClient, core: client.CoreV1Api, widgets: Crd,
                                           namespace: str) -> None:
    other = unique("ns")
    core.create_namespace({"metadata": {"name": other}})
    try:
        tag = unique("tag")
        for ns in (namespace, other):
            Objects(api, widgets, ns).create(widgets.body("same", labels={"tag": tag}))
        listed = client.CustomObjectsApi(api).list_custom_object_for_all_namespaces(
            widgets.group, widgets.version, widgets.plural, label_selector=f"tag={tag}")
        assert sorted(item["metadata"]["namespace"] for item in listed["items"]) == sorted([namespace, other])
    finally:
        core.delete_namespace(other)

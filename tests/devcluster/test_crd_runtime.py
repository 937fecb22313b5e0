"""CRDs created and deleted at runtime: the kind is served as soon as the CRD is Established, and gone after."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.devcluster.kube import OPEN_SPEC_SCHEMA, Crd, Objects, crd_manifest, delete_crd, expect_error, raw
from tests.waiting import wait_for


def conditions(api: client.ApiClient, crd: Crd) -> dict[str, str]:
    status = client.ApiextensionsV1Api(api).read_custom_resource_definition(crd.name).status
    return {c.type: c.status for c in status.conditions}


def test_crd_reports_established_and_names_accepted(api: client.ApiClient, widgets: Crd) -> None:
    assert conditions(api, widgets) | {"Established": "True", "NamesAccepted": "True"} == conditions(api, widgets)
    accepted = client.ApiextensionsV1Api(api).read_custom_resource_definition(widgets.name).status.accepted_names
    assert (accepted.kind, accepted.plural, accepted.short_names) == (widgets.kind, widgets.plural,
                                                                       [widgets.short_name])


def test_namespaced_kind_served_once_established(api: client.ApiClient, make_crd: Any, namespace: str) -> None:
    crd = make_crd(kind="Sprocket")
    objects = Objects(api, crd, namespace)
    created = objects.create(crd.body("one", {"size": 1}))
    assert created["metadata"]["namespace"] == namespace
    assert objects.get("one")["spec"] == {"size": 1}
    listed = objects.list()
    assert listed["kind"] == "SprocketList" and listed["apiVersion"] == crd.api_version
    assert [item["metadata"]["name"] for item in listed["items"]] == ["one"]


def test_cluster_scoped_kind_served_without_namespace(api: client.ApiClient, make_crd: Any) -> None:
    crd = make_crd(kind="Realm", scope="Cluster")
    objects = Objects(api, crd)
    created = objects.create(crd.body("global", {"size": 2}))
    assert "namespace" not in created["metadata"]
    assert objects.get("global")["spec"]["size"] == 2
    status, _, _ = raw(api, "GET", f"/apis/{crd.group}/{crd.version}/namespaces/default/{crd.plural}/global")
    assert status == 404


def test_duplicate_crd_is_409(api: client.ApiClient, widgets: Crd) -> None:
    manifest = crd_manifest(widgets, OPEN_SPEC_SCHEMA, True)
    body = expect_error(409, client.ApiextensionsV1Api(api).create_custom_resource_definition, manifest)
    assert body["reason"] == "AlreadyExists"


def test_crd_name_must_be_plural_dot_group(api: client.ApiClient, widgets: Crd) -> None:
    manifest = crd_manifest(widgets, OPEN_SPEC_SCHEMA, True)
    manifest["metadata"]["name"] = f"wrong.{widgets.group}"
    body = expect_error(422, client.ApiextensionsV1Api(api).create_custom_resource_definition, manifest)
    assert body["reason"] == "Invalid"


def test_deleting_crd_stops_serving_kind_and_deletes_its_objects(api: client.ApiClient, make_crd: Any,
                                                                 namespace: str) -> None:
    crd = make_crd(kind="Gizmo")
    objects = Objects(api, crd, namespace)
    objects.create(crd.body("doomed"))
    delete_crd(api, crd)
    wait_for(lambda: raw(api, "GET", f"/apis/{crd.group}/{crd.version}/namespaces/{namespace}/{crd.plural}")[0]
             == 404, timeout=10, message="kind no longer served")
    expect_error(404, objects.get, "doomed")

    # Re-creating the same CRD starts out empty: its objects were deleted with it.
    ext = client.ApiextensionsV1Api(api)
    wait_for(lambda: raw(api, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd.name}")[0]
             == 404, timeout=10, message="CRD fully deleted")
    ext.create_custom_resource_definition(crd_manifest(crd, OPEN_SPEC_SCHEMA, True))
    wait_for(lambda: conditions(api, crd).get("Established") == "True", timeout=10, message="re-established")
    assert objects.list()["items"] == []

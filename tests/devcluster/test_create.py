"""Create: status codes, server-filled metadata, generateName, and the Status bodies of refused creates."""

from __future__ import annotations

import re

from kubernetes import client

from tests.devcluster.kube import Crd, Objects, expect_error, unique

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_create_custom_resource_is_201_with_server_filled_metadata(api: client.ApiClient, widgets: Crd,
                                                                 namespace: str) -> None:
    custom = client.CustomObjectsApi(api)
    data, status, _ = custom.create_namespaced_custom_object_with_http_info(
        widgets.group, widgets.version, namespace, widgets.plural, widgets.body("w", {"size": 1}))
    assert status == 201
    meta = data["metadata"]
    assert meta["namespace"] == namespace
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert meta["resourceVersion"]
    assert RFC3339.match(meta["creationTimestamp"]), meta["creationTimestamp"]
    assert meta["generation"] == 1
    assert "deletionTimestamp" not in meta
    assert Objects(api, widgets, namespace).get("w")["metadata"] == meta


def test_create_configmap_is_201(core: client.CoreV1Api, namespace: str) -> None:
    data, status, _ = core.create_namespaced_config_map_with_http_info(namespace, {"metadata": {"name": "cm"}})
    assert status == 201
    assert data.metadata.namespace == namespace
    assert data.metadata.uid and data.metadata.resource_version


def test_uids_and_resource_versions_are_unique(core: client.CoreV1Api, namespace: str) -> None:
    made = [core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm{i}"}}) for i in range(3)]
    assert len({m.metadata.uid for m in made}) == 3
    assert len({m.metadata.resource_version for m in made}) == 3


def test_generate_name_appends_five_random_characters(core: client.CoreV1Api, namespace: str) -> None:
    first = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    second = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    for made in (first, second):
        assert re.fullmatch(r"gen-[a-z0-9]{5}", made.metadata.name), made.metadata.name
        assert made.metadata.generate_name == "gen-"
    assert first.metadata.name != second.metadata.name
    core.read_namespaced_config_map(first.metadata.name, namespace)


def test_generate_name_on_custom_resource(api: client.ApiClient, widgets: Crd, namespace: str) -> None:
    body = widgets.body("ignored")
    body["metadata"] = {"generateName": "w-"}
    made = Objects(api, widgets, namespace).create(body)
    assert re.fullmatch(r"w-[a-z0-9]{5}", made["metadata"]["name"])


def test_duplicate_name_is_409_already_exists(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "dup"}})
    body = expect_error(409, core.create_namespaced_config_map, namespace, {"metadata": {"name": "dup"}})
    assert body["reason"] == "AlreadyExists"
    assert body["details"]["name"] == "dup"
    assert body["details"]["kind"] == "configmaps"
    assert body["message"] == 'configmaps "dup" already exists'


def test_duplicate_custom_resource_is_409_already_exists(api: client.ApiClient, widgets: Crd,
                                                         namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    objects.create(widgets.body("dup"))
    body = expect_error(409, objects.create, widgets.body("dup"))
    assert body["reason"] == "AlreadyExists"
    assert (body["details"]["name"], body["details"]["group"], body["details"]["kind"]) == (
        "dup", widgets.group, widgets.plural)


def test_create_in_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    missing = unique("missing")
    body = expect_error(404, core.create_namespaced_config_map, missing, {"metadata": {"name": "cm"}})
    assert body["reason"] == "NotFound"
    assert body["details"]["name"] == missing and body["details"]["kind"] == "namespaces"


def test_create_custom_resource_in_missing_namespace_is_404(api: client.ApiClient, widgets: Crd) -> None:
    body = expect_error(404, Objects(api, widgets, unique("missing")).create, widgets.body("w"))
    assert body["reason"] == "NotFound"


def test_body_namespace_differing_from_url_is_400(core: client.CoreV1Api, namespace: str) -> None:
    body = expect_error(400, core.create_namespaced_config_map, namespace,
                        {"metadata": {"name": "cm", "namespace": "somewhere-else"}})
    assert body["reason"] == "BadRequest"


def test_create_without_name_or_generate_name_is_422(core: client.CoreV1Api, namespace: str) -> None:
    body = expect_error(422, core.create_namespaced_config_map, namespace, {"metadata": {"labels": {"a": "b"}}})
    assert body["reason"] == "Invalid"
    assert "metadata.name" in [c.get("field") for c in body["details"]["causes"]]


def test_invalid_object_name_is_422(core: client.CoreV1Api, namespace: str) -> None:
    body = expect_error(422, core.create_namespaced_config_map, namespace, {"metadata": {"name": "Not_Valid"}})
    assert body["reason"] == "Invalid"
    assert "metadata.name" in [c.get("field") for c in body["details"]["causes"]]

"""Replace and patch: optimistic concurrency, the three patch types, and no-op writes that leave RV unchanged.

Poolboy's correctness rests on these: every write computed from a read carries a precondition (resourceVersion
or a JSON-patch ``test``), and a failed precondition must change nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.devcluster.kube import JSON_PATCH, MERGE, STRATEGIC, Objects, expect_error


@pytest.fixture()
def objects(widget_objects: Objects) -> Objects:
    return widget_objects


def make(objects: Objects, name: str = "w", spec: Any = None) -> dict[str, Any]:
    return objects.create(objects.crd.body(name, spec if spec is not None else {"a": 1, "nested": {"x": 1}}))


def test_replace_with_current_resource_version_bumps_it(objects: Objects) -> None:
    current = make(objects)
    current["spec"]["a"] = 2
    replaced = objects.replace("w", current)
    assert replaced["spec"]["a"] == 2
    assert int(replaced["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])
    assert objects.get("w")["metadata"]["resourceVersion"] == replaced["metadata"]["resourceVersion"]


def test_replace_with_stale_resource_version_is_409_conflict(objects: Objects) -> None:
    stale = make(objects)
    fresh = dict(stale, spec={"a": 2})
    objects.replace("w", fresh)
    stale["spec"]["a"] = 3
    body = expect_error(409, objects.replace, "w", stale)
    assert body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]
    assert (body["details"]["name"], body["details"]["kind"]) == ("w", objects.crd.plural)
    assert objects.get("w")["spec"] == {"a": 2}


def test_replace_custom_resource_without_resource_version_is_422(objects: Objects) -> None:
    current = make(objects)
    del current["metadata"]["resourceVersion"]
    body = expect_error(422, objects.replace, "w", current)
    assert "metadata.resourceVersion" in [c.get("field") for c in body["details"]["causes"]]


def test_replace_configmap_without_resource_version_is_unconditional(core: client.CoreV1Api,
                                                                     namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    replaced = core.replace_namespaced_config_map("cm", namespace, {"metadata": {"name": "cm"}, "data": {"a": "2"}})
    assert replaced.data == {"a": "2"}


def test_replace_missing_object_is_404(core: client.CoreV1Api, namespace: str) -> None:
    expect_error(404, core.replace_namespaced_config_map, "absent", namespace, {"metadata": {"name": "absent"}})


def test_replace_with_name_differing_from_url_is_400(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}})
    body = expect_error(400, core.replace_namespaced_config_map, "cm", namespace, {"metadata": {"name": "other"}})
    assert body["reason"] == "BadRequest"


def test_replace_carrying_another_uid_is_409_precondition_failure(objects: Objects) -> None:
    current = make(objects)
    current["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
    body = expect_error(409, objects.replace, "w", current)
    assert body["reason"] == "Conflict"
    assert objects.get("w")["metadata"]["uid"] != current["metadata"]["uid"]


def test_merge_patch_merges_objects_and_null_deletes(objects: Objects) -> None:
    make(objects, spec={"a": 1, "b": 2, "nested": {"x": 1, "y": 2}, "list": [1, 2]})
    patched = objects.patch("w", {"spec": {"b": None, "c": 3, "nested": {"y": 20}, "list": [9]}}, MERGE)
    assert patched["spec"] == {"a": 1, "c": 3, "nested": {"x": 1, "y": 20}, "list": [9]}
    assert objects.get("w")["spec"] == patched["spec"]


def test_json_patch_applies_operations_in_order(objects: Objects) -> None:
    make(objects, spec={"a": 1, "items": ["x"]})
    patched = objects.patch("w", [
        {"op": "test", "path": "/spec/a", "value": 1},
        {"op": "replace", "path": "/spec/a", "value": 2},
        {"op": "add", "path": "/spec/items/-", "value": "y"},
        {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
        {"op": "copy", "from": "/spec/a", "path": "/spec/b"},
        {"op": "remove", "path": "/spec/items/0"},
    ], JSON_PATCH)
    assert patched["spec"] == {"a": 2, "b": 2, "items": ["y"]}
    assert patched["metadata"]["labels"] == {"k": "v"}


def test_failed_json_patch_test_is_422_and_changes_nothing(objects: Objects) -> None:
    created = make(objects)
    body = expect_error(422, objects.patch, "w", [
        {"op": "replace", "path": "/spec/a", "value": 5},
        {"op": "test", "path": "/spec/a", "value": 42},
    ], JSON_PATCH)
    assert body["status"] == "Failure"
    after = objects.get("w")
    assert after["spec"] == created["spec"]
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_json_patch_test_for_absent_path_fails(objects: Objects) -> None:
    make(objects)
    expect_error(422, objects.patch, "w", [{"op": "test", "path": "/spec/missing", "value": "x"}], JSON_PATCH)


def test_json_patch_remove_of_absent_path_fails(objects: Objects) -> None:
    make(objects)
    expect_error(422, objects.patch, "w", [{"op": "remove", "path": "/spec/missing"}], JSON_PATCH)


def test_strategic_merge_patch_on_configmap(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm", "labels": {"keep": "1", "drop": "1"}},
                                                  "data": {"a": "1", "b": "2"}})
    patched = core.patch_namespaced_config_map(
        "cm", namespace, {"metadata": {"labels": {"drop": None, "new": "1"}}, "data": {"b": None, "c": "3"}},
        _content_type=STRATEGIC)
    assert patched.data == {"a": "1", "c": "3"}
    assert patched.metadata.labels == {"keep": "1", "new": "1"}


def test_strategic_merge_patch_on_custom_resource_is_415(objects: Objects) -> None:
    make(objects)
    body = expect_error(415, objects.patch, "w", {"spec": {"a": 2}}, STRATEGIC)
    assert body["reason"] == "UnsupportedMediaType"


def test_patch_with_stale_resource_version_is_409(objects: Objects) -> None:
    created = make(objects)
    objects.patch("w", {"spec": {"a": 2}})
    body = expect_error(409, objects.patch, "w",
                        {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"a": 3}})
    assert body["reason"] == "Conflict"
    assert objects.get("w")["spec"]["a"] == 2


def test_patch_with_current_resource_version_succeeds(objects: Objects) -> None:
    created = make(objects)
    patched = objects.patch("w", {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                                  "spec": {"a": 3}})
    assert patched["spec"]["a"] == 3


def test_no_op_patch_and_replace_keep_resource_version(objects: Objects) -> None:
    created = make(objects)
    rv = created["metadata"]["resourceVersion"]
    assert objects.patch("w", {"spec": {"a": 1}})["metadata"]["resourceVersion"] == rv
    assert objects.patch("w", [{"op": "test", "path": "/spec/a", "value": 1}], JSON_PATCH)[
        "metadata"]["resourceVersion"] == rv
    assert objects.replace("w", created)["metadata"]["resourceVersion"] == rv
    assert objects.get("w")["metadata"]["resourceVersion"] == rv


def test_no_op_patch_on_configmap_keeps_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    patched = core.patch_namespaced_config_map("cm", namespace, {"data": {"a": "1"}}, _content_type=MERGE)
    assert patched.metadata.resource_version == created.metadata.resource_version


def test_patch_missing_object_is_404(objects: Objects) -> None:
    body = expect_error(404, objects.patch, "absent", {"spec": {"a": 1}})
    assert body["reason"] == "NotFound"


def test_patch_cannot_rename_object(objects: Objects) -> None:
    make(objects)
    try:
        objects.patch("w", {"metadata": {"name": "renamed"}})
    except ApiException as error:
        assert error.status in (400, 422), error.body
    else:
        raise AssertionError("a patch renamed the object")
    assert objects.exists("w") and objects.gone("renamed")

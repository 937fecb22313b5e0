"""The ``scale`` subresource of custom resources, served generically from a CRD's ``subresources.scale`` as
apiextensions-apiserver does: the autoscaling/v1 ``Scale`` that ``kubectl scale`` and autoscalers read and write.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.devcluster.kube import (
    JSON_PATCH,
    OPEN_SPEC_SCHEMA,
    Crd,
    Objects,
    crd_manifest,
    expect_error,
    raw,
    raw_ok,
    unique,
)

SCALE = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.ready",
         "labelSelectorPath": ".status.selector"}


@pytest.fixture()
def objects(api: client.ApiClient, make_crd: Any, namespace: str) -> Objects:
    return Objects(api, make_crd(kind="Gadget", scale=SCALE), namespace)


def make(objects: Objects, spec: Any = None) -> dict[str, Any]:
    return objects.create(objects.crd.body("g", spec if spec is not None else {"replicas": 2, "size": "s"}))


def test_discovery_lists_the_scale_subresource_as_autoscaling_v1(api: client.ApiClient, objects: Objects) -> None:
    crd = objects.crd
    resources = raw_ok(api, "GET", f"/apis/{crd.api_version}")["resources"]
    entry = next(r for r in resources if r["name"] == f"{crd.plural}/scale")
    assert (entry["group"], entry["version"], entry["kind"]) == ("autoscaling", "v1", "Scale")
    assert sorted(entry["verbs"]) == ["get", "patch", "update"]
    assert entry["namespaced"] is True


def test_get_maps_the_paths(objects: Objects) -> None:
    created = make(objects)
    scale = objects.get_scale("g")
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    meta = created["metadata"]
    assert scale["metadata"] == {key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion",
                                                           "creationTimestamp")}
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 0}  # absent status path reads 0; an absent selector is omitted
    objects.patch_status("g", {"status": {"ready": 1, "selector": "app=g"}})
    assert objects.get_scale("g")["status"] == {"replicas": 1, "selector": "app=g"}


def test_get_without_the_spec_value_is_a_500(objects: Objects) -> None:
    make(objects, {"size": "s"})
    body = expect_error(500, objects.get_scale, "g")
    assert body["message"] == 'Internal error occurred: the spec replicas field ".spec.replicas" does not exist'


def test_replace_sets_only_the_spec_path(objects: Objects) -> None:
    created = make(objects)
    objects.patch_status("g", {"status": {"ready": 2}})
    scale = objects.get_scale("g")
    scale["spec"]["replicas"] = 5
    answer = objects.replace_scale("g", scale)
    assert (answer["spec"], answer["status"]) == ({"replicas": 5}, {"replicas": 2})
    stored = objects.get("g")
    assert stored["spec"] == {"replicas": 5, "size": "s"}
    assert stored["status"] == {"ready": 2}
    assert stored["metadata"]["generation"] == created["metadata"]["generation"] + 1
    assert answer["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


def test_replace_with_a_stale_resource_version_is_409_and_without_one_is_unconditional(objects: Objects) -> None:
    make(objects)
    stale = objects.get_scale("g")
    objects.patch("g", {"spec": {"size": "m"}})
    stale["spec"]["replicas"] = 7
    body = expect_error(409, objects.replace_scale, "g", stale)
    assert body["reason"] == "Conflict"
    assert objects.get("g")["spec"]["replicas"] == 2
    del stale["metadata"]["resourceVersion"]
    assert objects.replace_scale("g", stale)["spec"] == {"replicas": 7}


def test_replace_of_the_same_replicas_keeps_the_resource_version(objects: Objects) -> None:
    created = make(objects)
    answer = objects.replace_scale("g", objects.get_scale("g"))
    assert answer["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_merge_and_json_patches_apply_to_the_scale(objects: Objects) -> None:
    make(objects)
    assert objects.patch_scale("g", {"spec": {"replicas": 3}})["spec"] == {"replicas": 3}
    answer = objects.patch_scale("g", [{"op": "test", "path": "/spec/replicas", "value": 3},
                                       {"op": "replace", "path": "/spec/replicas", "value": 4}], JSON_PATCH)
    assert answer["spec"] == {"replicas": 4}
    assert objects.get("g")["spec"]["replicas"] == 4


def test_patch_creates_a_missing_spec_value_but_never_leaves_it_empty(objects: Objects) -> None:
    make(objects, {"size": "s"})
    body = expect_error(400, objects.patch_scale, "g", {"metadata": {"labels": {"a": "b"}}})
    assert body["message"] == 'the spec replicas field ".spec.replicas" cannot be empty'
    assert objects.patch_scale("g", {"spec": {"replicas": 1}})["spec"] == {"replicas": 1}
    assert objects.get("g")["spec"] == {"replicas": 1, "size": "s"}


def test_zero_replicas_are_omitted_from_the_scale_spec(objects: Objects) -> None:
    make(objects)
    assert objects.patch_scale("g", {"spec": {"replicas": 0}})["spec"] == {}
    assert objects.get("g")["spec"]["replicas"] == 0


def test_negative_replicas_are_invalid(objects: Objects) -> None:
    make(objects)
    body = expect_error(422, objects.patch_scale, "g", {"spec": {"replicas": -1}})
    causes = body["details"]["causes"]
    assert {"reason": "FieldValueInvalid", "field": ".spec.replicas",
            "message": "Invalid value: -1: should be a non-negative integer"} in causes
    assert objects.get("g")["spec"]["replicas"] == 2


@pytest.mark.parametrize("replicas", [2 ** 31, 1.5, "3", True])
def test_replicas_that_are_not_an_int32_are_400(objects: Objects, replicas: Any) -> None:
    make(objects)
    scale = objects.get_scale("g")
    scale["spec"]["replicas"] = replicas
    expect_error(400, objects.replace_scale, "g", scale)


def test_writes_of_the_object_keep_the_scale_paths_valid(objects: Objects) -> None:
    make(objects)
    body = expect_error(422, objects.patch, "g", {"spec": {"replicas": "many"}})
    assert body["details"]["causes"][0]["field"] == ".spec.replicas"
    assert "accessor error: many is of the type string, expected int64" in body["message"]
    expect_error(422, objects.patch_status, "g", {"status": {"ready": -2}})
    expect_error(422, objects.patch_status, "g", {"status": {"selector": {"app": "g"}}})


def test_a_crd_without_scale_has_no_scale_endpoint(widget_objects: Objects) -> None:
    widget_objects.create(widget_objects.crd.body("w", {"replicas": 1}))
    try:
        widget_objects.api.get_namespaced_custom_object_scale(widget_objects.crd.group, widget_objects.crd.version,
                                                              widget_objects.namespace, widget_objects.crd.plural,
                                                              "w")
    except ApiException as error:
        assert error.status == 404
    else:
        raise AssertionError("GET /scale of a CRD without a scale subresource succeeded")


@pytest.mark.parametrize(("scale", "field", "detail"), [
    ({"statusReplicasPath": ".status.n"}, "specReplicasPath", "Required value"),
    ({"specReplicasPath": ".metadata.x", "statusReplicasPath": ".status.n"}, "specReplicasPath",
     "should be a json path under .spec"),
    ({"specReplicasPath": ".spec.n", "statusReplicasPath": "status.n"}, "statusReplicasPath",
     "must be a simple json path starting with ."),
    ({"specReplicasPath": ".spec.n", "statusReplicasPath": ".status.n", "labelSelectorPath": ".metadata.s"},
     "labelSelectorPath", "should be a json path under either .spec or .status"),
])
def test_crd_scale_paths_are_validated(api: client.ApiClient, scale: dict[str, str], field: str,
                                       detail: str) -> None:
    crd = Crd(group=f"{unique('t')}.conformance.test", version="v1", plural="things", singular="thing",
              kind="Thing", scope="Namespaced", short_name=unique("th"))
    # raw: the client's own model refuses a scale without specReplicasPath before sending it
    status, _, body = raw(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                          body=crd_manifest(crd, OPEN_SPEC_SCHEMA, True, scale))
    assert (status, body["reason"]) == (422, "Invalid"), body
    assert f"spec.versions[0].subresources.scale.{field}" in body["message"]
    assert detail in body["message"]

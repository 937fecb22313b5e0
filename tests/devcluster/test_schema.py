"""OpenAPI v3 schema of a CRD: validation (422 Invalid with causes), pruning, nullable and defaulting.

Poolboy validates its own parameters, but it relies on the API server to reject malformed objects and to prune
unknown fields; a devcluster that accepted anything would hide bugs that a real cluster reports.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.devcluster.kube import Crd, Objects, crd_manifest, create_crd, delete_crd, expect_error, unique

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
        "color": {"type": "string", "enum": ["red", "green"]},
        "enabled": {"type": "boolean"},
        "ratio": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
        "sealed": {"type": "object", "additionalProperties": False},
        "note": {"type": "string", "nullable": True},
        "plain": {"type": "string"},
        "mode": {"type": "string", "default": "auto"},
        "nested": {"type": "object", "default": {}, "properties": {"level": {"type": "integer", "default": 3}}},
        "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                   "properties": {"size": {"type": "integer"}}},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": SPEC_SCHEMA,
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


@pytest.fixture(scope="module")
def typed(api: client.ApiClient) -> Any:
    crd = create_crd(api, kind="Typed", schema=SCHEMA)
    yield crd
    delete_crd(api, crd)


@pytest.fixture()
def objects(api: client.ApiClient, typed: Crd, namespace: str) -> Objects:
    return Objects(api, typed, namespace)


def valid_spec(**changes: Any) -> dict[str, Any]:
    return {"name": "ok", **changes}


def assert_invalid(objects: Objects, spec: dict[str, Any], field: str) -> dict[str, Any]:
    """Creating an object with ``spec`` is refused with 422 Invalid, naming ``field`` among the causes."""
    name = unique("bad")
    body = expect_error(422, objects.create, objects.crd.body(name, spec))
    assert body["reason"] == "Invalid", body
    details = body["details"]
    assert (details["name"], details["group"], details["kind"]) == (name, objects.crd.group, objects.crd.kind)
    fields = [cause.get("field") for cause in details.get("causes", [])]
    assert field in fields, f"{field} not among causes {fields}"
    assert objects.gone(name)
    return body


@pytest.mark.parametrize(("field", "value"), [
    ("replicas", "three"), ("replicas", 1.5), ("enabled", "yes"), ("ratio", "high"), ("tags", "a,b"),
    ("tags", [1, 2]), ("name", 7), ("limits", "lots"),
])
def test_type_mismatch_is_invalid(objects: Objects, field: str, value: Any) -> None:
    expected = "spec.tags[0]" if value == [1, 2] else f"spec.{field}"
    body = assert_invalid(objects, valid_spec(**{field: value}), expected)
    assert any(c.get("reason") == "FieldValueTypeInvalid" for c in body["details"]["causes"]), body


def test_missing_required_field_is_invalid(objects: Objects) -> None:
    body = assert_invalid(objects, {"replicas": 1}, "spec.name")
    assert any(c.get("reason") == "FieldValueRequired" for c in body["details"]["causes"]), body


def test_value_outside_enum_is_invalid(objects: Objects) -> None:
    body = assert_invalid(objects, valid_spec(color="blue"), "spec.color")
    assert any(c.get("reason") == "FieldValueNotSupported" for c in body["details"]["causes"]), body


def test_pattern_mismatch_is_invalid(objects: Objects) -> None:
    assert_invalid(objects, valid_spec(name="UPPER"), "spec.name")


@pytest.mark.parametrize("replicas", [0, 6])
def test_minimum_and_maximum_are_enforced(objects: Objects, replicas: int) -> None:
    assert_invalid(objects, valid_spec(replicas=replicas), "spec.replicas")


def test_bounds_are_inclusive(objects: Objects) -> None:
    objects.create(objects.crd.body("low", valid_spec(replicas=1)))
    objects.create(objects.crd.body("high", valid_spec(replicas=5)))


def test_max_length_is_enforced(objects: Objects) -> None:
    body = assert_invalid(objects, valid_spec(name="abcdefghi"), "spec.name")
    assert any(c.get("reason") == "FieldValueTooLong" for c in body["details"]["causes"]), body


def test_additional_properties_false_refuses_any_key(objects: Objects) -> None:
    objects.create(objects.crd.body("empty", valid_spec(sealed={})))
    assert_invalid(objects, valid_spec(sealed={"x": 1}), "spec.sealed.x")


def test_schema_valued_additional_properties_validates_map_values(objects: Objects) -> None:
    created = objects.create(objects.crd.body("limits", valid_spec(limits={"cpu": 2, "memory": 4})))
    assert created["spec"]["limits"] == {"cpu": 2, "memory": 4}
    assert_invalid(objects, valid_spec(limits={"cpu": "two"}), "spec.limits.cpu")


def test_crd_with_properties_and_additional_properties_false_is_rejected(api: client.ApiClient) -> None:
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}}}
    tag = unique("x")
    crd = Crd(group=f"{tag}.conformance.test", version="v1", plural="bads", singular="bad", kind="Bad",
              scope="Namespaced", short_name=tag)
    body = expect_error(422, client.ApiextensionsV1Api(api).create_custom_resource_definition,
                        crd_manifest(crd, schema, False))
    assert body["reason"] == "Invalid"


def test_nullable_field_keeps_null_and_non_nullable_null_is_pruned(objects: Objects) -> None:
    created = objects.create(objects.crd.body("nulls", valid_spec(note=None, plain=None)))
    assert "note" in created["spec"] and created["spec"]["note"] is None
    assert "plain" not in created["spec"]
    assert objects.get("nulls")["spec"]["note"] is None


def test_null_for_defaulted_non_nullable_field_gets_the_default(objects: Objects) -> None:
    created = objects.create(objects.crd.body("nulldefault", valid_spec(mode=None)))
    assert created["spec"]["mode"] == "auto"


def test_preserve_unknown_fields_keeps_unknown_keys_but_validates_declared_ones(objects: Objects) -> None:
    created = objects.create(objects.crd.body("free", valid_spec(config={"size": 3, "anything": {"deep": [1]}})))
    assert created["spec"]["config"] == {"size": 3, "anything": {"deep": [1]}}
    assert objects.get("free")["spec"]["config"]["anything"] == {"deep": [1]}
    assert_invalid(objects, valid_spec(config={"size": "big"}), "spec.config.size")


def test_unknown_fields_are_pruned(objects: Objects) -> None:
    body = objects.crd.body("pruned", valid_spec(unknown="x", nested={"level": 1, "stray": True}))
    body["topLevelStray"] = {"a": 1}
    created = objects.create(body)
    assert "unknown" not in created["spec"]
    assert created["spec"]["nested"] == {"level": 1}
    assert "topLevelStray" not in created
    stored = objects.get("pruned")
    assert "unknown" not in stored["spec"] and "topLevelStray" not in stored


def test_defaults_are_applied_including_inside_defaulted_objects(objects: Objects) -> None:
    created = objects.create(objects.crd.body("defaults", valid_spec()))
    assert created["spec"]["mode"] == "auto"
    assert created["spec"]["nested"] == {"level": 3}
    assert objects.get("defaults")["spec"]["mode"] == "auto"


def test_update_is_validated_too_and_leaves_object_unchanged(objects: Objects) -> None:
    created = objects.create(objects.crd.body("upd", valid_spec(replicas=2)))
    body = expect_error(422, objects.patch, "upd", {"spec": {"replicas": 99}})
    assert body["reason"] == "Invalid"
    after = objects.get("upd")
    assert after["spec"]["replicas"] == 2
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

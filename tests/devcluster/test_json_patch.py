"""JSON patch (RFC 6902) the way kube-apiserver applies it (evanphx/json-patch v4), not the way the RFC reads.

Operators depend on the differences: upstream Poolboy (Kopf) initialises a fresh handle's status with ``test`` ops
of value ``null`` on members that do not exist yet, which the real server lets pass when their parent exists.
Every refusal here is a 422 whose Status carries kube-apiserver's generic wording and changes nothing.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client

from devcluster.testing import DevCluster
from tests.devcluster.kube import JSON_PATCH, Objects, expect_error, raw

GENERIC_422 = "the server rejected our request due to an error in our request"


@pytest.fixture()
def objects(widget_objects: Objects) -> Objects:
    return widget_objects


def make(objects: Objects, spec: Any = None) -> dict[str, Any]:
    return objects.create(objects.crd.body("w", spec if spec is not None else {"a": 1, "items": ["x", "y"]}))


def refused(objects: Objects, ops: list[dict[str, Any]], status: bool = False) -> dict[str, Any]:
    """Require a 422 with the server's generic Status, and that the object did not change."""
    before = objects.get("w")
    call = objects.patch_status if status else objects.patch
    body = expect_error(422, call, "w", ops, JSON_PATCH)
    assert (body["reason"], body["message"], body.get("details")) == ("Invalid", GENERIC_422, {})
    after = objects.get("w")
    assert after == before
    return body


def patched(objects: Objects, ops: list[dict[str, Any]], status: bool = False) -> dict[str, Any]:
    return (objects.patch_status if status else objects.patch)("w", ops, JSON_PATCH)


# --- test on missing members: what Kopf-based operators send ----------------------------------------------------

def test_kopf_style_status_initialisation_passes(objects: Objects) -> None:
    make(objects)
    result = patched(objects, [{"op": "test", "path": "/status", "value": None},
                               {"op": "add", "path": "/status", "value": {"phase": "new"}}], status=True)
    assert result["status"] == {"phase": "new"}
    result = patched(objects, [{"op": "test", "path": "/status/resources", "value": None},
                               {"op": "add", "path": "/status/resources", "value": [{"name": "r"}]}], status=True)
    assert result["status"] == {"phase": "new", "resources": [{"name": "r"}]}
    refused(objects, [{"op": "test", "path": "/status", "value": None}], status=True)


def test_null_test_on_missing_spec_member_guards_a_conditional_bind(objects: Objects) -> None:
    make(objects)
    bound = patched(objects, [{"op": "test", "path": "/spec/resourceClaim", "value": None},
                              {"op": "add", "path": "/spec/resourceClaim", "value": {"name": "c1"}}])
    assert bound["spec"]["resourceClaim"] == {"name": "c1"}
    refused(objects, [{"op": "test", "path": "/spec/resourceClaim", "value": None},
                      {"op": "add", "path": "/spec/resourceClaim", "value": {"name": "c2"}}])


def test_test_without_value_passes_only_on_a_missing_member(objects: Objects) -> None:
    make(objects)
    assert patched(objects, [{"op": "test", "path": "/spec/missing"}])["spec"]["a"] == 1
    refused(objects, [{"op": "test", "path": "/spec/a"}])


@pytest.mark.parametrize("path", ["/status/resources", "/spec/missing/deeper", "/spec/a/deeper",
                                  "/spec/items/5/name", "/spec/items/x/name", "status"])
def test_null_test_needs_an_existing_parent(objects: Objects, path: str) -> None:
    make(objects)
    refused(objects, [{"op": "test", "path": path, "value": None}], status=path.startswith("/status"))


def test_non_null_test_on_missing_member_fails(objects: Objects) -> None:
    make(objects)
    refused(objects, [{"op": "test", "path": "/spec/missing", "value": "x"}])


# --- test: values, whole document, arrays -----------------------------------------------------------------------

@pytest.mark.parametrize(("stored", "given", "passes"), [
    (1, 1, True), (1, True, False), (1, 1.0, False), (1.5, 1.5, True), ("1", 1, False),
    ({"k": [1, None]}, {"k": [1, None]}, True), ({"k": 1}, {"k": 1, "extra": None}, False),
    ([1, 2], [1, 2], True), ([1, 2], [2, 1], False),
])
def test_test_compares_json_values(objects: Objects, stored: Any, given: Any, passes: bool) -> None:
    make(objects, {"v": stored})
    ops = [{"op": "test", "path": "/spec/v", "value": given}]
    if passes:
        patched(objects, ops)
    else:
        refused(objects, ops)


def test_test_of_the_whole_document(objects: Objects) -> None:
    current = make(objects)
    patched(objects, [{"op": "test", "path": "", "value": current}])
    refused(objects, [{"op": "test", "path": "", "value": {**current, "spec": {}}}])


@pytest.mark.parametrize(("path", "passes"), [
    ("/spec/items/0", True), ("/spec/items/00", True), ("/spec/items/+0", True), ("/spec/items/-2", True),
    ("/spec/items/2", False), ("/spec/items/-3", False), ("/spec/items/-", False), ("/spec/items/a", False),
])
def test_test_array_indexes(objects: Objects, path: str, passes: bool) -> None:
    make(objects)
    ops = [{"op": "test", "path": path, "value": "x"}]
    if passes:
        patched(objects, ops)
    else:
        refused(objects, ops)


# --- add / remove / replace / move / copy ---------------------------------------------------------------------

@pytest.mark.parametrize(("path", "items"), [
    ("/spec/items/-", ["x", "y", "n"]), ("/spec/items/2", ["x", "y", "n"]), ("/spec/items/0", ["n", "x", "y"]),
    ("/spec/items/-1", ["x", "y", "n"]), ("/spec/items/-3", ["n", "x", "y"]),
])
def test_add_to_arrays(objects: Objects, path: str, items: list[str]) -> None:
    make(objects)
    assert patched(objects, [{"op": "add", "path": path, "value": "n"}])["spec"]["items"] == items


@pytest.mark.parametrize("path", ["/spec/items/3", "/spec/items/-4", "/spec/items/x", "/spec/missing/x", "",
                                  "spec"])
def test_add_refusals(objects: Objects, path: str) -> None:
    make(objects)
    refused(objects, [{"op": "add", "path": path, "value": "n"}])


def test_add_replaces_an_existing_member(objects: Objects) -> None:
    make(objects)
    assert patched(objects, [{"op": "add", "path": "/spec/a", "value": 2}])["spec"]["a"] == 2


@pytest.mark.parametrize(("path", "items"), [("/spec/items/0", ["y"]), ("/spec/items/-1", ["x"])])
def test_remove_from_arrays(objects: Objects, path: str, items: list[str]) -> None:
    make(objects)
    assert patched(objects, [{"op": "remove", "path": path}])["spec"]["items"] == items


@pytest.mark.parametrize("path", ["/spec/missing", "/spec/missing/x", "/spec/items/2", "/spec/items/-",
                                  "/spec/items/-3", ""])
def test_remove_refusals(objects: Objects, path: str) -> None:
    make(objects)
    refused(objects, [{"op": "remove", "path": path}])


def test_replace_of_a_missing_object_member_adds_it(objects: Objects) -> None:
    make(objects)
    assert patched(objects, [{"op": "replace", "path": "/spec/b", "value": 2}])["spec"]["b"] == 2


@pytest.mark.parametrize("path", ["/spec/items/2", "/spec/missing/x"])
def test_replace_refusals(objects: Objects, path: str) -> None:
    make(objects)
    refused(objects, [{"op": "replace", "path": path, "value": 1}])


def test_replace_negative_index_counts_from_the_end(objects: Objects) -> None:
    make(objects)
    assert patched(objects, [{"op": "replace", "path": "/spec/items/-1", "value": "z"}])["spec"]["items"] == [
        "x", "z"]


def test_move_and_copy(objects: Objects) -> None:
    make(objects)
    result = patched(objects, [{"op": "move", "from": "/spec/items/0", "path": "/spec/items/-"},
                               {"op": "copy", "from": "/spec/a", "path": "/spec/b"}])
    assert result["spec"] == {"a": 1, "b": 1, "items": ["y", "x"]}
    refused(objects, [{"op": "move", "from": "/spec/missing", "path": "/spec/c"}])
    refused(objects, [{"op": "move", "from": "/spec/a", "path": "/spec/missing/c"}])
    refused(objects, [{"op": "copy", "from": "/spec/items/9", "path": "/spec/c"}])


# --- malformed patches ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", [{"op": "frobnicate", "path": "/spec/a"}, {"path": "/spec/a"},
                                {"op": "add", "value": 1}, {"op": "move", "path": "/spec/b"}])
def test_unknown_or_incomplete_operations_are_422(objects: Objects, op: dict[str, Any]) -> None:
    make(objects)
    refused(objects, [op])


def send(devcluster: DevCluster, path: str, body: bytes) -> tuple[int, Any]:
    """A raw JSON-patch request: the official client turns a non-list json-patch body into a strategic merge."""
    request = urllib.request.Request(devcluster.url + path, data=body, method="PATCH",
                                     headers={"Content-Type": JSON_PATCH})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_patch_that_is_not_a_list_of_operations_is_400(devcluster: DevCluster, objects: Objects) -> None:
    make(objects)
    path = f"/apis/{objects.crd.api_version}/namespaces/{objects.namespace}/{objects.crd.plural}/w"
    for body in (b'{"op": "test", "path": "/spec/a", "value": 1}', b'["not an operation"]'):
        status, answer = send(devcluster, path, body)
        assert (status, answer["reason"]) == (400, "BadRequest"), answer
    for body in (b"[]", b"null"):
        status, answer = send(devcluster, path, body)
        assert (status, answer["spec"]["a"]) == (200, 1), answer


# --- requests for APIs devcluster does not serve are counted by path ------------------------------------------

def test_unserved_requests_are_counted_by_path(api: client.ApiClient, devcluster: DevCluster,
                                               widget_objects: Objects) -> None:
    crd, namespace = widget_objects.crd, widget_objects.namespace
    widget_objects.create(crd.body("w", {"a": 1}))
    unknown_group = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfpeerings"
    unknown_resource = f"/apis/{crd.api_version}/namespaces/{namespace}/gadgets"
    unknown_subresource = f"/apis/{crd.api_version}/namespaces/{namespace}/{crd.plural}/w/scale"
    before = devcluster.counters()
    for path in (unknown_group, unknown_group, unknown_resource, unknown_subresource, "/openapi/v2"):
        status, _, answer = raw(api, "GET", path)
        assert status == 404, (path, answer)
    status, _, answer = raw(api, "GET", unknown_subresource)
    assert (answer["reason"], answer["message"]) == ("NotFound", f'{crd.plural}.{crd.group} "w" not found')
    after = devcluster.counters()
    counted = after["unserved"]["by_path"]
    previously = before["unserved"]["by_path"]
    assert {path: counted[path] - previously.get(path, 0) for path in (
        unknown_group, unknown_resource, unknown_subresource, "/openapi/v2")} == {
        unknown_group: 2, unknown_resource: 1, unknown_subresource: 2, "/openapi/v2": 1}
    assert after["unserved"]["total"] - before["unserved"]["total"] == 6
    assert after["total"] == before["total"]  # unserved requests are not counted as served ones

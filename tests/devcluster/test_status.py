"""The status subresource: status and spec have separate writers, and generation tracks spec changes only.

Invariant 4 of the design (each object's status has one writer) depends on the API server refusing to let a
status write touch spec and a main-endpoint write touch status.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.devcluster.kube import JSON_PATCH, MERGE, Objects, expect_error, raw


@pytest.fixture()
def objects(widget_objects: Objects) -> Objects:
    return widget_objects


def make(objects: Objects) -> dict[str, Any]:
    return objects.create(objects.crd.body("w", {"size": 1}))


def test_status_in_create_is_dropped(objects: Objects) -> None:
    body = objects.crd.body("w", {"size": 1})
    body["status"] = {"phase": "Forged"}
    created = objects.create(body)
    assert "status" not in created or not created["status"]


def test_patch_status_changes_only_status(objects: Objects) -> None:
    make(objects)
    patched = objects.patch_status("w", {"spec": {"size": 99}, "status": {"phase": "Ready"}})
    assert patched["status"] == {"phase": "Ready"}
    assert patched["spec"] == {"size": 1}
    assert objects.get("w")["spec"] == {"size": 1}


def test_json_patch_on_status(objects: Objects) -> None:
    make(objects)
    objects.patch_status("w", {"status": {"phase": "Pending"}})
    patched = objects.patch_status("w", [{"op": "test", "path": "/status/phase", "value": "Pending"},
                                         {"op": "replace", "path": "/status/phase", "value": "Ready"}], JSON_PATCH)
    assert patched["status"]["phase"] == "Ready"


def test_replace_status_changes_only_status(objects: Objects) -> None:
    current = make(objects)
    current["spec"] = {"size": 50}
    current["status"] = {"phase": "Ready"}
    replaced = objects.replace_status("w", current)
    assert replaced["status"] == {"phase": "Ready"}
    assert replaced["spec"] == {"size": 1}


def test_replace_status_with_stale_resource_version_is_409(objects: Objects) -> None:
    stale = make(objects)
    objects.patch_status("w", {"status": {"phase": "A"}})
    stale["status"] = {"phase": "B"}
    assert expect_error(409, objects.replace_status, "w", stale)["reason"] == "Conflict"


def test_main_endpoint_ignores_status(objects: Objects) -> None:
    make(objects)
    objects.patch_status("w", {"status": {"phase": "Ready"}})
    current = objects.get("w")
    current["status"] = {"phase": "Overwritten"}
    current["spec"] = {"size": 2}
    replaced = objects.replace("w", current)
    assert replaced["status"] == {"phase": "Ready"}
    assert replaced["spec"] == {"size": 2}
    patched = objects.patch("w", {"status": {"phase": "Patched"}}, MERGE)
    assert patched["status"] == {"phase": "Ready"}
    assert patched["metadata"]["resourceVersion"] == replaced["metadata"]["resourceVersion"]


def test_generation_changes_only_on_spec_changes(objects: Objects) -> None:
    assert make(objects)["metadata"]["generation"] == 1
    assert objects.patch_status("w", {"status": {"phase": "Ready"}})["metadata"]["generation"] == 1
    assert objects.patch("w", {"metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}}})[
        "metadata"]["generation"] == 1
    assert objects.patch("w", {"metadata": {"finalizers": ["conformance.test/hold"]}})["metadata"]["generation"] == 1
    assert objects.patch("w", {"spec": {"size": 2}})["metadata"]["generation"] == 2
    assert objects.patch("w", {"spec": {"size": 3}})["metadata"]["generation"] == 3
    assert objects.patch("w", {"spec": {"size": 3}})["metadata"]["generation"] == 3
    objects.patch("w", {"metadata": {"finalizers": None}})


def test_without_status_subresource_status_is_an_ordinary_field(api: client.ApiClient, make_crd: Any,
                                                                 namespace: str) -> None:
    crd = make_crd(kind="Plain", status_subresource=False)
    objects = Objects(api, crd, namespace)
    body = crd.body("p", {"size": 1})
    body["status"] = {"phase": "Given"}
    created = objects.create(body)
    assert created["status"] == {"phase": "Given"}
    patched = objects.patch("p", {"status": {"phase": "Changed"}})
    assert patched["status"] == {"phase": "Changed"}
    assert patched["metadata"]["generation"] == 2
    path = f"/apis/{crd.group}/{crd.version}/namespaces/{namespace}/{crd.plural}/p/status"
    assert raw(api, "GET", path)[0] == 404

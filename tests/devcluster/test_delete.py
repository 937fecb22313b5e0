"""Delete: finalizers, preconditions, deletecollection and namespace termination.

Invariant 5 (finalizers are removed only after cleanup) only holds if the server keeps a finalized object,
visible with a deletionTimestamp, until the last finalizer goes — and refuses new finalizers meanwhile.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.devcluster.kube import Crd, Objects, expect_error, names, unique
from tests.waiting import wait_for

HOLD = "conformance.test/hold"


@pytest.fixture()
def objects(widget_objects: Objects) -> Objects:
    return widget_objects


def test_delete_returns_success_status_and_object_is_gone(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}})
    data, status, _ = core.delete_namespaced_config_map_with_http_info("cm", namespace)
    assert status == 200
    assert (data["kind"], data["status"]) == ("Status", "Success"), data
    assert data["details"]["name"] == "cm" and data["details"]["uid"] == created.metadata.uid
    expect_error(404, core.read_namespaced_config_map, "cm", namespace)


def test_delete_missing_is_404(objects: Objects) -> None:
    assert expect_error(404, objects.delete, "absent")["reason"] == "NotFound"


def test_finalizer_keeps_object_with_deletion_timestamp(objects: Objects) -> None:
    objects.create(objects.crd.body("w", finalizers=[HOLD]))
    returned = objects.delete("w")
    assert returned["metadata"]["deletionTimestamp"], returned
    held = objects.get("w")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == [HOLD]
    # Deleting again is harmless and keeps the object.
    objects.delete("w")
    assert objects.exists("w")
    objects.patch("w", {"metadata": {"finalizers": None}})
    wait_for(lambda: objects.gone("w"), timeout=5, message="object deleted once its last finalizer went")


def test_removing_one_of_two_finalizers_keeps_object(objects: Objects) -> None:
    objects.create(objects.crd.body("w", finalizers=[HOLD, "conformance.test/b"]))
    objects.delete("w")
    objects.patch("w", {"metadata": {"finalizers": ["conformance.test/b"]}})
    assert objects.get("w")["metadata"]["finalizers"] == ["conformance.test/b"]
    objects.patch("w", {"metadata": {"finalizers": []}})
    wait_for(lambda: objects.gone("w"), timeout=5, message="object deleted")


def test_spec_can_still_change_while_deleting(objects: Objects) -> None:
    objects.create(objects.crd.body("w", {"a": 1}, finalizers=[HOLD]))
    objects.delete("w")
    assert objects.patch("w", {"spec": {"a": 2}})["spec"]["a"] == 2
    objects.patch("w", {"metadata": {"finalizers": None}})


def test_adding_finalizer_while_deleting_is_422(objects: Objects) -> None:
    objects.create(objects.crd.body("w", finalizers=[HOLD]))
    objects.delete("w")
    body = expect_error(422, objects.patch, "w", {"metadata": {"finalizers": [HOLD, "conformance.test/late"]}})
    assert body["reason"] == "Invalid"
    assert objects.get("w")["metadata"]["finalizers"] == [HOLD]
    objects.patch("w", {"metadata": {"finalizers": None}})


def test_deletion_timestamp_cannot_be_cleared(objects: Objects) -> None:
    objects.create(objects.crd.body("w", finalizers=[HOLD]))
    objects.delete("w")
    objects.patch("w", {"metadata": {"deletionTimestamp": None}})
    assert objects.get("w")["metadata"]["deletionTimestamp"]
    objects.patch("w", {"metadata": {"finalizers": None}})


def test_uid_precondition_mismatch_is_409(objects: Objects) -> None:
    objects.create(objects.crd.body("w"))
    wrong = {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}
    body = expect_error(409, objects.delete, "w", body=wrong)
    assert body["reason"] == "Conflict"
    assert objects.exists("w")


def test_resource_version_precondition_mismatch_is_409(objects: Objects) -> None:
    created = objects.create(objects.crd.body("w"))
    objects.patch("w", {"spec": {"changed": True}})
    stale = {"preconditions": {"resourceVersion": created["metadata"]["resourceVersion"]}}
    assert expect_error(409, objects.delete, "w", body=stale)["reason"] == "Conflict"
    assert objects.exists("w")


def test_matching_preconditions_delete(objects: Objects) -> None:
    created = objects.create(objects.crd.body("w"))
    meta = created["metadata"]
    objects.delete("w", body={"preconditions": {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}})
    assert objects.gone("w")


def test_deletecollection_with_label_selector(core: client.CoreV1Api, namespace: str) -> None:
    for name, labels in {"a": {"kill": "yes"}, "b": {"kill": "yes"}, "c": {"kill": "no"}, "d": {}}.items():
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": {"set": "x", **labels}}})
    core.delete_collection_namespaced_config_map(namespace, label_selector="kill=yes")
    wait_for(lambda: names(core.list_namespaced_config_map(namespace, label_selector="set=x").items) == {"c", "d"},
             timeout=5, message="only selected configmaps deleted")


def test_deletecollection_of_custom_resources(api: client.ApiClient, widgets: Crd, namespace: str) -> None:
    objects = Objects(api, widgets, namespace)
    for name, tier in (("a", "x"), ("b", "x"), ("c", "y")):
        objects.create(widgets.body(name, labels={"tier": tier}))
    client.CustomObjectsApi(api).delete_collection_namespaced_custom_object(
        widgets.group, widgets.version, namespace, widgets.plural, label_selector="tier=x")
    wait_for(lambda: names(objects.list()["items"]) == {"c"}, timeout=5, message="only tier=x deleted")


def test_deleting_namespace_deletes_its_contents(api: client.ApiClient, core: client.CoreV1Api,
                                                 widgets: Crd) -> None:
    ns = unique("doomed")
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}})
    core.create_namespaced_secret(ns, {"metadata": {"name": "s"}})
    objects = Objects(api, widgets, ns)
    objects.create(widgets.body("w"))
    core.delete_namespace(ns)
    wait_for(lambda: expect_error(404, core.read_namespace, ns), timeout=10, message="namespace gone")
    assert objects.gone("w")
    expect_error(404, core.read_namespaced_config_map, "cm", ns)
    expect_error(404, core.read_namespaced_secret, "s", ns)


def test_terminating_namespace_refuses_new_objects_until_finalized(api: client.ApiClient,
                                                                   core: client.CoreV1Api, widgets: Crd) -> None:
    ns = unique("terminating")
    core.create_namespace({"metadata": {"name": ns}})
    objects = Objects(api, widgets, ns)
    objects.create(widgets.body("held", finalizers=[HOLD]))
    core.delete_namespace(ns)
    wait_for(lambda: core.read_namespace(ns).status.phase == "Terminating", timeout=5, message="Terminating")
    wait_for(lambda: objects.get("held")["metadata"].get("deletionTimestamp"), timeout=10,
             message="namespace deletion reached the custom resource")
    body = expect_error(403, core.create_namespaced_config_map, ns, {"metadata": {"name": "late"}})
    assert body["reason"] == "Forbidden"
    assert core.read_namespace(ns).metadata.deletion_timestamp
    objects.patch("held", {"metadata": {"finalizers": None}})
    wait_for(lambda: expect_error(404, core.read_namespace, ns), timeout=10, message="namespace gone")

"""CRUD of the built-in kinds Poolboy and kubectl use: Namespace, ConfigMap, Secret, ServiceAccount, Event, Lease."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from kubernetes import client

from tests.devcluster.kube import expect_error, names, raw, unique
from tests.waiting import wait_for


def test_namespace_crud(core: client.CoreV1Api) -> None:
    name = unique("crud")
    created = core.create_namespace({"metadata": {"name": name, "labels": {"team": "a"}}})
    assert created.metadata.uid and created.status.phase == "Active"
    assert core.read_namespace(name).metadata.labels["team"] == "a"
    assert name in names(core.list_namespace(label_selector="team=a").items)
    core.patch_namespace(name, {"metadata": {"labels": {"team": "b"}}},
                         _content_type="application/merge-patch+json")
    assert core.read_namespace(name).metadata.labels["team"] == "b"
    core.delete_namespace(name)
    wait_for(lambda: name not in names(core.list_namespace().items), timeout=10, message="namespace gone")
    expect_error(404, core.read_namespace, name)


def test_configmap_crud(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    assert created.data == {"a": "1"}
    read = core.read_namespaced_config_map("cm", namespace)
    assert read.metadata.uid == created.metadata.uid
    read.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("cm", namespace, read)
    assert replaced.data == {"a": "1", "b": "2"}
    core.delete_namespaced_config_map("cm", namespace)
    expect_error(404, core.read_namespaced_config_map, "cm", namespace)


def test_secret_string_data_is_stored_base64_in_data(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}, "stringData": {"password": "hunter2"},
                                              "data": {"user": base64.b64encode(b"me").decode()}})
    secret = core.read_namespaced_secret("s", namespace)
    assert secret.type == "Opaque"
    assert secret.string_data is None
    assert base64.b64decode(secret.data["password"]) == b"hunter2"
    assert base64.b64decode(secret.data["user"]) == b"me"
    core.delete_namespaced_secret("s", namespace)
    expect_error(404, core.read_namespaced_secret, "s", namespace)


def test_secret_with_invalid_base64_is_rejected(core: client.CoreV1Api, namespace: str) -> None:
    status, _, body = raw(core.api_client, "POST", f"/api/v1/namespaces/{namespace}/secrets", body={
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}, "data": {"k": "%%%"}})
    assert status == 400, body


def test_service_account_crud(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_service_account(namespace, {"metadata": {"name": "robot"}})
    assert created.metadata.namespace == namespace
    assert "robot" in names(core.list_namespaced_service_account(namespace).items)
    core.delete_namespaced_service_account("robot", namespace)
    expect_error(404, core.read_namespaced_service_account, "robot", namespace)


def core_event(namespace: str, name: str, involved: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "name": involved, "namespace": namespace, "apiVersion": "v1"},
        "reason": "Tested", "message": f"about {involved}", "type": "Normal", "count": 1,
        "source": {"component": "conformance"},
    }


def test_core_v1_event_crud_and_involved_object_field_selector(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_event(namespace, core_event(namespace, "e1", "alpha"))
    core.create_namespaced_event(namespace, core_event(namespace, "e2", "beta"))
    assert core.read_namespaced_event("e1", namespace).reason == "Tested"
    selected = core.list_namespaced_event(namespace, field_selector="involvedObject.name=alpha").items
    assert names(selected) == {"e1"}
    selected = core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.kind=ConfigMap,involvedObject.namespace={namespace}").items
    assert names(selected) == {"e1", "e2"}
    core.patch_namespaced_event("e1", namespace, {"count": 2}, _content_type="application/merge-patch+json")
    assert core.read_namespaced_event("e1", namespace).count == 2
    core.delete_namespaced_event("e1", namespace)
    expect_error(404, core.read_namespaced_event, "e1", namespace)


def events_v1_event(namespace: str, name: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "eventTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": "conformance.test/ctl", "reportingInstance": "ctl-1",
        "action": "Reconcile", "reason": "Tested", "note": "hello", "type": "Normal",
        "regarding": {"kind": "ConfigMap", "name": "target", "namespace": namespace, "apiVersion": "v1"},
    }


def test_events_v1_event_crud(api: client.ApiClient, namespace: str) -> None:
    events = client.EventsV1Api(api)
    events.create_namespaced_event(namespace, events_v1_event(namespace, "ev"))
    read = events.read_namespaced_event("ev", namespace)
    assert (read.note, read.regarding.name, read.reporting_controller) == ("hello", "target", "conformance.test/ctl")
    assert "ev" in names(events.list_namespaced_event(namespace).items)
    events.delete_namespaced_event("ev", namespace)
    expect_error(404, events.read_namespaced_event, "ev", namespace)


def test_events_v1_event_is_visible_through_core_v1(api: client.ApiClient, core: client.CoreV1Api,
                                                    namespace: str) -> None:
    client.EventsV1Api(api).create_namespaced_event(namespace, events_v1_event(namespace, "shared"))
    seen = core.read_namespaced_event("shared", namespace)
    assert seen.involved_object.name == "target"
    assert seen.message == "hello"
    assert seen.reason == "Tested"


def test_events_v1_event_requires_event_time_and_reporting_fields(api: client.ApiClient, namespace: str) -> None:
    body = events_v1_event(namespace, "incomplete")
    del body["eventTime"]
    del body["reportingController"]
    # Sent raw: the generated client would refuse the incomplete body before the server sees it.
    status, _, reply = raw(api, "POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                           body={"apiVersion": "events.k8s.io/v1", "kind": "Event", **body})
    assert status == 422, reply
    assert reply["reason"] == "Invalid"
    fields = {cause.get("field") for cause in reply["details"]["causes"]}
    assert {"eventTime", "reportingController"} <= fields, fields


def test_lease_crud_with_optimistic_concurrency(api: client.ApiClient, namespace: str) -> None:
    leases = client.CoordinationV1Api(api)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    created = leases.create_namespaced_lease(namespace, {
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": now, "renewTime": now},
    })
    assert created.spec.holder_identity == "a" and created.spec.lease_duration_seconds == 15
    created.spec.holder_identity = "b"
    updated = leases.replace_namespaced_lease("leader", namespace, created)
    assert updated.spec.holder_identity == "b"
    assert updated.metadata.resource_version != created.metadata.resource_version
    created.spec.holder_identity = "c"  # still carries the old resourceVersion
    assert expect_error(409, leases.replace_namespaced_lease, "leader", namespace, created)["reason"] == "Conflict"
    leases.delete_namespaced_lease("leader", namespace)
    expect_error(404, leases.read_namespaced_lease, "leader", namespace)

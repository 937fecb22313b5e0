"""Poolboy acts for a claim only within what its provider grants (docs/security.md#6-poolboy-acts-only-on-what-it-made,
#7-secret-values-never-leak), tried as a cluster's users would: a user whose only grant is ``edit`` in one namespace
(and a colleague with ``view`` there) against the chart's ServiceAccounts on the real API server.

Each scenario is one way a deputy with more rights than its users is pointed elsewhere: a resource planted in
``kube-system`` through the project's own example provider, a cluster-scoped object, another application's object
adopted, shown and deleted through a claim, a Secret's values read through a claim's status (and the read cache).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from stack.local import LocalStack
from tests.clusters import E2E_CLUSTER, e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import User, condition, user_with_role
from tests.waiting import wait_for

pytestmark = [pytest.mark.skipif(E2E_CLUSTER != "real", reason="needs the real API server's users and RBAC")]

ROOT = Path(__file__).resolve().parents[2]
D = "poolboy.gpte.redhat.com"
NS = "poolboy"
SECRET_VALUE = "correct-horse-battery-staple"
THEIR_VALUE = "another-apps-password"


@dataclass
class People:
    """The administrator, and a user with ``edit`` and a colleague with ``view`` in namespace ``mine``."""

    admin: User
    mine: str
    shared: str
    edit: client.ApiClient
    view: client.ApiClient


def _bind(stack: LocalStack, role: str, namespace: str) -> client.ApiClient:
    return user_with_role(stack, role, namespace).api_client()


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=1, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        yield running


@pytest.fixture(scope="module")
def people(stack: LocalStack) -> People:
    admin = User(stack)
    mine, shared = admin.namespace("mine"), admin.namespace("shared")
    example = yaml.safe_load((ROOT / "examples" / "10-provider.yaml").read_text())
    admin.provider("hello", example["spec"])  # the project's own example, as administrators copy it
    admin.provider("pinned", {  # pins the namespace, leaves names free (as many providers are written)
        "override": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": shared}},
        "updateFilters": [{"pathMatch": "/data/.*"}], "healthCheck": "true", "readinessCheck": "true"})
    admin.provider("open", {"override": {"metadata": {"labels": {"made-by": "poolboy"}}},
                            "healthCheck": "true", "readinessCheck": "true"})
    admin.provider("secret", {
        "template": {"enable": True},
        "override": {"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "creds-{{ guid }}", "namespace": "{{ resource_claim.metadata.namespace }}"},
            "stringData": {"password": SECRET_VALUE}},
        "healthCheck": "true", "readinessCheck": "true"})
    admin.core.create_namespaced_config_map(shared, {"metadata": {"name": "app-config"},
                                                     "data": {"password": THEIR_VALUE}})
    return People(admin, mine, shared, _bind(stack, "edit", mine), _bind(stack, "view", mine))


def claim(api: client.ApiClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    client.CustomObjectsApi(api).create_namespaced_custom_object(D, "v1", namespace, "resourceclaims", {
        "apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": name}, "spec": spec})


def read_claim(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        D, "v1", namespace, "resourceclaims", name)
    return found


def synced_false(people: People, name: str, reason: str) -> dict[str, Any]:
    return people.admin.wait_claim(people.mine, name, lambda c: condition(c, "Synced").get("reason") == reason,
                                   timeout=30, message=f"Synced=False {reason}")


def warning_reasons(people: People, name: str) -> set[str]:
    return {e.reason for e in people.admin.events(people.mine, name) if e.type == "Warning"}


def poolboy_made(people: People, namespace: str) -> list[str]:
    return [cm.metadata.name for cm in people.admin.config_maps(namespace)
            if f"{D}/resource-handle-name" in (cm.metadata.annotations or {})]


def test_a_claim_cannot_plant_a_resource_in_kube_system_through_the_example_provider(people: People) -> None:
    claim(people.edit, people.mine, "plant", {"resources": [{"provider": {"name": "hello"}, "template": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "kube-system"},
        "data": {"greeting": "planted"}}}]})
    refused = synced_false(people, "plant", "ValidationFailed")
    message = condition(refused, "Synced")["message"]
    assert "kube-system" in message and f"the claim's namespace {people.mine}" in message
    assert not (refused.get("status") or {}).get("resourceHandle"), "nothing was bound for it"
    assert "ValidationFailed" in warning_reasons(people, "plant")
    assert poolboy_made(people, "kube-system") == []


def test_a_claim_cannot_make_a_cluster_scoped_object(people: People) -> None:
    claim(people.edit, people.mine, "cluster", {"resources": [{"provider": {"name": "open"}, "template": {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"planted-{uuid.uuid4().hex[:6]}"}}}]})
    refused = synced_false(people, "cluster", "ValidationFailed")
    assert "cluster-scoped" in condition(refused, "Synced")["message"]
    assert not (refused.get("status") or {}).get("resourceHandle")


def test_a_namespace_the_provider_allows_is_served(people: People) -> None:
    people.admin.custom.patch_namespaced_custom_object(D, "v1", NS, "resourceproviders", "open", {
        "spec": {"allowedTargets": {"namespaces": [people.shared]}}})
    claim(people.edit, people.mine, "allowed", {"resources": [{"provider": {"name": "open"}, "template": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": people.shared}, "data": {"a": "b"}}}]})
    people.admin.wait_claim(people.mine, "allowed", lambda c: condition(c, "Ready").get("status") == "True",
                            timeout=30, message="Ready")
    assert len(poolboy_made(people, people.shared)) == 1


def test_another_applications_object_is_neither_shown_patched_nor_deleted(people: People) -> None:
    before = people.admin.config_map(people.shared, "app-config")
    assert before is not None
    claim(people.edit, people.mine, "adopt", {"resources": [{"provider": {"name": "pinned"}, "template": {
        "metadata": {"name": "app-config"}, "data": {"password": "mine-now"}}}]})
    refused = synced_false(people, "adopt", "ResourceConflict")
    assert f"ConfigMap app-config in namespace {people.shared}" in condition(refused, "Synced")["message"]
    wait_for(lambda: "ResourceConflict" in warning_reasons(people, "adopt"), timeout=15, interval=0.2,
             message="a ResourceConflict Warning Event on the claim")
    for reader in (people.edit, people.view):
        assert THEIR_VALUE not in json.dumps(read_claim(reader, people.mine, "adopt"))
    client.CustomObjectsApi(people.edit).delete_namespaced_custom_object(D, "v1", people.mine, "resourceclaims",
                                                                         "adopt")
    people.admin.wait_gone(people.mine, "adopt", timeout=30)
    handle = (refused.get("status") or {}).get("resourceHandle", {}).get("name")
    wait_for(lambda: people.admin.get_handle(handle) is None, timeout=30, interval=0.2, message="the handle deleted")
    after = people.admin.config_map(people.shared, "app-config")
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["resource_version"] == before["metadata"]["resource_version"], "never patched"


def test_secret_values_are_not_readable_through_a_claim(stack: LocalStack, people: People) -> None:
    claim(people.edit, people.mine, "creds", {"provider": {"name": "secret", "parameterValues": {}}})
    ready = people.admin.wait_claim(people.mine, "creds", lambda c: condition(c, "Ready").get("status") == "True"
                                    and (c["status"].get("resources") or [{}])[0].get("state"), timeout=30,
                                    message="Ready, with the Secret's state")
    handle = ready["status"]["resourceHandle"]["name"]
    secret = client.CoreV1Api(stack.cluster.api_client()).read_namespaced_secret(  # type: ignore[union-attr]
        f"creds-{handle.removeprefix('guid-')}", people.mine)
    assert secret.data["password"], "the Secret itself carries the value"
    with pytest.raises(ApiException) as denied:
        client.CoreV1Api(people.view).read_namespaced_secret(secret.metadata.name, people.mine)
    assert denied.value.status == 403, "view may not read Secrets"
    seen = read_claim(people.view, people.mine, "creds")
    state = seen["status"]["resources"][0]["state"]
    assert state["kind"] == "Secret" and set(state["data"]) == {"password"}, "the keys stay"
    text = json.dumps(seen)
    assert SECRET_VALUE not in text and secret.data["password"] not in text
    cache = redis.Redis.from_url(stack.redis_url)
    assert not [key for key in cache.scan_iter(count=1000)
                if cache.type(key) == b"hash" and secret.data["password"].encode() in (cache.hget(key, "doc") or b"")]

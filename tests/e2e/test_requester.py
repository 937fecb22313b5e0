"""The requester of a claim (docs/behaviour.md#requester), with identities the real API server gives.

On plain Kubernetes there is no ``user.openshift.io``: a namespace that names a requester gives the placeholder user
and no identity, and nothing fails. With OpenShift's user API served (here as CRDs of the same shape,
:mod:`tests.e2e.openshift_users`) and the namespace stamped with the user who created it by the API server itself (a
MutatingAdmissionPolicy from ``request.userInfo``, as OpenShift's project request does), a claim made by that user
carries their identity into the templates and the managed resources' annotations. Poolboy reads the user API as its
worker ServiceAccount, with the chart's grant.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from stack.local import LocalStack
from tests.clusters import E2E_CLUSTER, e2e_options
from tests.e2e import openshift_users
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import User, condition
from tests.waiting import wait_for

pytestmark = [pytest.mark.skipif(E2E_CLUSTER != "real", reason="needs the real API server's user identities")]

D = "poolboy.gpte.redhat.com"
PROVIDER = "requester-card"
#: what the provider's ConfigMap says of its requester (the requester variables are the override's, spec §4)
CARD = {
    "user": "{{ requester_user.metadata.name if requester_user else 'none' }}",
    "identities": "{{ requester_identities | length if requester_identities is not none else 'none' }}",
    "email": "{{ requester_identity.extra.email if requester_identity and requester_identity.extra.email else '' }}",
}


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=1, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        User(running).provider(PROVIDER, {
            "template": {"enable": True},
            "override": {"apiVersion": "v1", "kind": "ConfigMap", "data": CARD, "metadata": {
                "name": "card-{{ guid }}", "namespace": "{{ resource_claim.metadata.namespace }}"}},
            "healthCheck": "true", "readinessCheck": "true"})
        yield running


def card(stack: LocalStack, api: client.ApiClient, namespace: str, name: str = "card") -> client.V1ConfigMap:
    """A claim made through ``api``, once it is Ready, and the ConfigMap it got."""
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(D, "v1", namespace, "resourceclaims", {
        "apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"provider": {"name": PROVIDER, "parameterValues": {}}}})
    claim = User(stack).wait_claim(namespace, name, lambda c: condition(c, "Ready").get("status") == "True",
                                   timeout=30)
    handle = claim["status"]["resourceHandle"]["name"]
    return client.CoreV1Api(stack.cluster.api_client()).read_namespaced_config_map(  # type: ignore[union-attr]
        f"card-{handle.removeprefix('guid-')}", namespace)


def wait_for_the_user_api(stack: LocalStack, user: str) -> None:
    """Until a claim made now sees ``user``'s identity: a worker that found the API absent asks again at most every
    5 s (docs/behaviour.md#requester)."""
    admin = User(stack)
    namespace = f"probe-{uuid.uuid4().hex[:6]}"
    admin.core.create_namespace({"metadata": {"name": namespace, "annotations": {openshift_users.REQUESTER: user}}})
    probes = iter(range(1000))
    wait_for(lambda: card(stack, admin.custom.api_client, namespace, f"probe-{next(probes)}").data["identities"]
             == "1", timeout=30, interval=0.5, message="the worker to find the user API")


def requester_annotations(config_map: client.V1ConfigMap) -> dict[str, Any]:
    prefix = f"{D}/resource-requester-"
    annotations = config_map.metadata.annotations or {}
    return {k.removeprefix(prefix): v for k, v in annotations.items() if k.startswith(prefix)}


def test_without_the_user_api_a_named_requester_is_the_placeholder_user(stack: LocalStack) -> None:
    admin = User(stack)
    namespace = f"req-{uuid.uuid4().hex[:6]}"
    admin.core.create_namespace({"metadata": {"name": namespace, "annotations": {openshift_users.REQUESTER: "bob"}}})
    made = card(stack, admin.custom.api_client, namespace)
    assert made.data == {"user": "bob", "identities": "0", "email": ""}
    assert requester_annotations(made) == {"user": "bob"}
    assert stack.denied() == []  # the worker asked discovery, not the absent API


def test_a_user_who_creates_a_namespace_is_its_requester_with_their_identity(stack: LocalStack) -> None:
    cluster = stack.cluster
    assert cluster is not None
    admin = cluster.api_client()
    openshift_users.install_api(cluster)
    alice = cluster.add_user(f"alice-{uuid.uuid4().hex[:6]}", ["developers"])
    openshift_users.create_user(admin, alice.name, email=f"{alice.name}@example.com", full_name="Alice Liddell")
    wait_for_the_user_api(stack, alice.name)
    openshift_users.stamp_requesters(admin)  # from now on a namespace names who created it
    rbac = client.RbacAuthorizationV1Api(admin)
    rbac.create_cluster_role({"metadata": {"name": f"{alice.name}-self-provisioner"},
                              "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create"]}]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": f"{alice.name}-self-provisioner"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": f"{alice.name}-self-provisioner"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": alice.name}]})
    namespace = f"req-{uuid.uuid4().hex[:6]}"
    created = wait_for(lambda: client.CoreV1Api(alice.api_client()).create_namespace({"metadata": {"name": namespace}}),
                       timeout=15, interval=0.2, message="the user's grant to create namespaces")
    assert created.metadata.annotations[openshift_users.REQUESTER] == alice.name  # the API server's own word
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": f"{alice.name}-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": alice.name}]})

    claims = client.CustomObjectsApi(alice.api_client())
    wait_for(lambda: claims.list_namespaced_custom_object(D, "v1", namespace, "resourceclaims"), timeout=15,
             interval=0.2, message="the user's edit grant in the namespace")
    made = card(stack, alice.api_client(), namespace)
    assert made.data == {"user": alice.name, "identities": "1", "email": f"{alice.name}@example.com"}
    assert requester_annotations(made) == {"user": alice.name, "email": f"{alice.name}@example.com",
                                           "name": "Alice Liddell", "preferred-username": alice.name}
    assert stack.denied() == []

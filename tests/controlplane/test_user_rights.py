"""What a Poolboy user may do, judged by the real API server: the chart's ClusterRoles that aggregate into ``edit`` and
``view`` (rendered by ``helm template``, applied unchanged), and named users with client certificates bound to those
built-in roles in their namespace only (docs/security.md, "Users")."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from controlplane.testing import ControlPlane, User
from tests.deploy.conftest import render
from tests.waiting import wait_for

D, V1 = "poolboy.gpte.redhat.com", "v1"


@pytest.fixture(scope="module")
def namespaces(control_plane: ControlPlane) -> Iterator[tuple[str, str]]:
    """Two user namespaces, A and B, with a claim in each; the chart's aggregated roles applied."""
    rbac = client.RbacAuthorizationV1Api(control_plane.api_client())
    for role in render():
        if role["kind"] == "ClusterRole" and "aggregate-to" in role["metadata"]["name"]:
            rbac.create_cluster_role(role)
    core = client.CoreV1Api(control_plane.api_client())
    names = tuple(f"{side}-{uuid.uuid4().hex[:6]}" for side in ("a", "b"))
    custom = client.CustomObjectsApi(control_plane.api_client())
    for name in names:
        core.create_namespace({"metadata": {"name": name}})
        custom.create_namespaced_custom_object(D, V1, name, "resourceclaims", claim("existing"))
        custom.patch_namespaced_custom_object_status(D, V1, name, "resourceclaims", "existing",
                                                     {"status": {"resourceHandle": {"name": "guid-abcde"}}})
    yield names[0], names[1]


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{D}/{V1}", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"provider": {"name": "any", "parameterValues": {}}}}


def bound_to(control_plane: ControlPlane, role: str, namespace: str) -> User:
    """A new user whose only grant is the built-in ``role`` in ``namespace``, once the API server says so."""
    user = control_plane.add_user(f"user-{uuid.uuid4().hex[:6]}", ["poolboy-users"])
    client.RbacAuthorizationV1Api(control_plane.api_client()).create_namespaced_role_binding(namespace, {
        "metadata": {"name": f"{user.name}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.name}],
    })
    custom = client.CustomObjectsApi(user.api_client())
    wait_for(lambda: custom.list_namespaced_custom_object(D, V1, namespace, "resourceclaims") is not None,
             timeout=30, interval=0.2, message=f"{role} aggregated and bound")
    return user


def refused(call: Callable[[], Any]) -> bool:
    try:
        call()
    except client.ApiException as error:
        if error.status == 403:
            return True
        raise
    return False


def test_edit_in_a_namespace_manages_claims_there_and_nothing_else(control_plane: ControlPlane,
                                                                   namespaces: tuple[str, str]) -> None:
    mine, other = namespaces
    user = bound_to(control_plane, "edit", mine)
    custom = client.CustomObjectsApi(user.api_client())
    custom.create_namespaced_custom_object(D, V1, mine, "resourceclaims", claim("c"))
    custom.patch_namespaced_custom_object(D, V1, mine, "resourceclaims", "c", {"metadata": {"labels": {"x": "y"}}})
    assert custom.get_namespaced_custom_object(D, V1, mine, "resourceclaims", "c")["metadata"]["labels"] == {"x": "y"}
    existing = custom.get_namespaced_custom_object(D, V1, mine, "resourceclaims", "existing")
    assert existing["status"]["resourceHandle"]["name"] == "guid-abcde"  # a claim's status is read with the claim
    assert refused(lambda: custom.patch_namespaced_custom_object_status(
        D, V1, mine, "resourceclaims", "c", {"status": {"resourceHandle": {"name": "stolen"}}}))
    custom.delete_namespaced_custom_object(D, V1, mine, "resourceclaims", "c")

    assert refused(lambda: custom.list_namespaced_custom_object(D, V1, other, "resourceclaims"))
    assert refused(lambda: custom.get_namespaced_custom_object(D, V1, other, "resourceclaims", "existing"))
    for plural in ("resourcehandles", "resourcepools", "resourceproviders", "resourcepoolscalings"):
        assert refused(lambda p=plural: custom.create_namespaced_custom_object(
            D, V1, mine, p, {"apiVersion": f"{D}/{V1}", "kind": "X", "metadata": {"name": "x"}})), plural
        assert refused(lambda p=plural: custom.list_namespaced_custom_object(D, V1, "poolboy", p)), plural


def test_view_in_a_namespace_reads_claims_there_and_writes_nothing(control_plane: ControlPlane,
                                                                   namespaces: tuple[str, str]) -> None:
    mine, other = namespaces
    user = bound_to(control_plane, "view", mine)
    custom = client.CustomObjectsApi(user.api_client())
    assert [c["metadata"]["name"] for c in custom.list_namespaced_custom_object(
        D, V1, mine, "resourceclaims")["items"]] == ["existing"]
    assert custom.get_namespaced_custom_object(D, V1, mine, "resourceclaims", "existing")["status"]
    assert refused(lambda: custom.create_namespaced_custom_object(D, V1, mine, "resourceclaims", claim("c")))
    assert refused(lambda: custom.patch_namespaced_custom_object(
        D, V1, mine, "resourceclaims", "existing", {"metadata": {"labels": {"x": "y"}}}))
    assert refused(lambda: custom.delete_namespaced_custom_object(D, V1, mine, "resourceclaims", "existing"))
    assert refused(lambda: custom.list_namespaced_custom_object(D, V1, other, "resourceclaims"))

"""What a Poolboy user may do, judged by the real API server, one test per promise (docs/security.md, "Users").

The chart's ClusterRoles that aggregate into ``admin``, ``edit`` and ``view`` are rendered by ``helm template`` and
applied unchanged; each user is a client certificate bound to one built-in role in namespace A only. Every test
asserts what is refused (403 from RBAC, nothing else) next to what succeeds, so a refusal cannot come from an object
or a namespace that is not there."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from controlplane.testing import ControlPlane, User
from tests.controlplane.helm_release import create_namespace
from tests.deploy.conftest import render
from tests.waiting import wait_for

pytestmark = pytest.mark.helm

D, V1 = "poolboy.gpte.redhat.com", "v1"
CLAIMS = "resourceclaims"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
#: plural -> kind and a valid spec; every kind but claims is the operator's, which users may neither write nor read
KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    CLAIMS: ("ResourceClaim", {"provider": {"name": "any", "parameterValues": {}}}),
    "resourcehandles": ("ResourceHandle", {}),
    "resourcepools": ("ResourcePool", {}),
    "resourceproviders": ("ResourceProvider", {}),
    "resourcepoolscalings": ("ResourcePoolScaling", {"resourcePool": {"name": "guid-existing"}, "count": 1}),
}
#: a name every kind accepts (a handle's must start with ``guid-``)
EXISTING = "guid-existing"
OPERATOR_STATUS = {"resourceHandle": {"name": "guid-abcde"}}
STOLEN = {"resourceHandle": {"name": "stolen"}}
LABEL = {"metadata": {"labels": {"x": "y"}}}
ROLES = ("admin", "edit", "view")
WRITERS = ("admin", "edit")


@dataclass(frozen=True)
class Kinds:
    """One identity's requests on Poolboy's kinds (claims unless told), with the answers typed as JSON objects."""

    api: client.CustomObjectsApi

    def get(self, namespace: str, name: str = EXISTING, plural: str = CLAIMS) -> dict[str, Any]:
        found: Any = self.api.get_namespaced_custom_object(D, V1, namespace, plural, name)
        return dict(found)

    def items(self, namespace: str, plural: str = CLAIMS) -> list[dict[str, Any]]:
        listed: Any = self.api.list_namespaced_custom_object(D, V1, namespace, plural)
        return list(listed["items"])

    def names(self, namespace: str) -> list[str]:
        return [c["metadata"]["name"] for c in self.items(namespace)]

    def create(self, namespace: str, body: dict[str, Any], plural: str = CLAIMS) -> dict[str, Any]:
        created: Any = self.api.create_namespaced_custom_object(D, V1, namespace, plural, body)
        return dict(created)

    def patch(self, namespace: str, body: dict[str, Any], name: str = EXISTING, plural: str = CLAIMS) -> None:
        self.api.patch_namespaced_custom_object(D, V1, namespace, plural, name, body)

    def replace(self, namespace: str, body: dict[str, Any], name: str = EXISTING, plural: str = CLAIMS) -> None:
        self.api.replace_namespaced_custom_object(D, V1, namespace, plural, name, body)

    def delete(self, namespace: str, name: str = EXISTING, plural: str = CLAIMS) -> None:
        self.api.delete_namespaced_custom_object(D, V1, namespace, plural, name)

    def patch_status(self, namespace: str, status: dict[str, Any], name: str = EXISTING) -> None:
        self.api.patch_namespaced_custom_object_status(D, V1, namespace, CLAIMS, name, {"status": status})

    def replace_status(self, namespace: str, body: dict[str, Any], name: str = EXISTING) -> None:
        self.api.replace_namespaced_custom_object_status(D, V1, namespace, CLAIMS, name, body)

    def first_watch_event(self, namespace: str, plural: str = CLAIMS) -> str:
        """Open a watch and return its first event's type (ADDED for an existing object); a refusal raises."""
        response: Any = self.api.list_namespaced_custom_object(D, V1, namespace, plural, watch=True,
                                                               timeout_seconds=5, _preload_content=False)
        try:
            return str(json.loads(response.readline())["type"])
        finally:
            response.close()


def as_identity(api_client: Any) -> Kinds:
    return Kinds(client.CustomObjectsApi(api_client))


@dataclass(frozen=True)
class Setup:
    """Namespaces A and B with a claim each (its status written by the admin, as the operator does), an operator
    namespace with one object of every operator kind, and one user per built-in role, bound in A."""

    mine: str
    other: str
    operator: str
    users: dict[str, User]
    admin: Kinds

    def user(self, role: str) -> Kinds:
        return as_identity(self.users[role].api_client())


OPERATOR_KINDS = [plural for plural in KINDS if plural != CLAIMS]


def manifest(plural: str = CLAIMS, name: str = EXISTING) -> dict[str, Any]:
    kind, spec = KINDS[plural]
    return {"apiVersion": f"{D}/{V1}", "kind": kind, "metadata": {"name": name}, "spec": spec}


def claim(name: str = EXISTING) -> dict[str, Any]:
    return manifest(CLAIMS, name)


def aggregated_roles() -> list[dict[str, Any]]:
    """The chart's ClusterRoles that aggregate into the built-in roles, as helm renders them."""
    return [m for m in render() if m["kind"] == "ClusterRole" and "aggregate-to" in m["metadata"]["name"]]


def claim_with_operator_status(admin: Kinds, namespace: str, name: str = EXISTING) -> str:
    admin.create(namespace, claim(name))
    admin.patch_status(namespace, OPERATOR_STATUS, name)
    return name


def namespace_with_claim(cluster: ControlPlane, admin: Kinds, prefix: str) -> str:
    name = create_namespace(cluster, prefix)
    claim_with_operator_status(admin, name)
    return name


def operator_namespace(cluster: ControlPlane, admin: Kinds) -> str:
    name = create_namespace(cluster, "operator")
    for plural in OPERATOR_KINDS:
        admin.create(name, manifest(plural), plural)
    return name


def bound_to(cluster: ControlPlane, role: str, namespace: str) -> User:
    """A new user whose only grant is the built-in ``role`` in ``namespace``, once the API server says so."""
    user = cluster.add_user(f"{role}-user-{uuid.uuid4().hex[:6]}", ["poolboy-users"])
    cluster.request("POST", f"{RBAC}/namespaces/{namespace}/rolebindings", {
        "metadata": {"name": f"{user.name}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.name}],
    })
    kinds = as_identity(user.api_client())
    wait_for(lambda: kinds.items(namespace) is not None, timeout=30, interval=0.2,
             message=f"{role} aggregated and bound")
    return user


@pytest.fixture(scope="module")
def setup(control_plane: ControlPlane) -> Iterator[Setup]:
    roles = aggregated_roles()
    for role in roles:
        control_plane.request("POST", f"{RBAC}/clusterroles", role)
    admin = as_identity(control_plane.api_client())
    mine = namespace_with_claim(control_plane, admin, "a")
    other = namespace_with_claim(control_plane, admin, "b")
    users = {role: bound_to(control_plane, role, mine) for role in ROLES}
    yield Setup(mine, other, operator_namespace(control_plane, admin), users, admin)
    for role in roles:
        control_plane.request("DELETE", f"{RBAC}/clusterroles/{role['metadata']['name']}")


def refused(call: Callable[[], Any]) -> bool:
    """The API server answers 403 (any other failure is no refusal, and fails the test)."""
    try:
        call()
    except client.ApiException as error:
        if error.status == 403:
            return True
        raise
    return False


def status_writes_refused(user: Kinds, admin: Kinds, namespace: str, name: str) -> None:
    """PATCH and PUT of a claim's /status are refused, and the operator's status stays."""
    assert refused(lambda: user.patch_status(namespace, STOLEN, name))
    assert refused(lambda: user.replace_status(namespace, {**admin.get(namespace, name), "status": STOLEN}, name))
    assert admin.get(namespace, name)["status"] == OPERATOR_STATUS


def writes_refused(user: Kinds, namespace: str, plural: str = CLAIMS) -> None:
    """Create, patch, update and delete in ``namespace`` are each refused."""
    assert refused(lambda: user.create(namespace, manifest(plural, "guid-new"), plural))
    assert refused(lambda: user.patch(namespace, LABEL, plural=plural))
    assert refused(lambda: user.replace(namespace, manifest(plural), plural=plural))
    assert refused(lambda: user.delete(namespace, plural=plural))


def reads_refused(user: Kinds, namespace: str, plural: str = CLAIMS) -> None:
    """Get, list and watch in ``namespace`` are each refused."""
    assert refused(lambda: user.get(namespace, plural=plural))
    assert refused(lambda: user.items(namespace, plural))
    assert refused(lambda: user.first_watch_event(namespace, plural))


def reads_allowed(user: Kinds, namespace: str) -> None:
    """Get, list and watch in ``namespace`` each show the existing claim."""
    assert user.get(namespace)["metadata"]["name"] == EXISTING
    assert EXISTING in user.names(namespace)
    assert user.first_watch_event(namespace) == "ADDED"


def unchanged(admin: Kinds, namespace: str, plural: str = CLAIMS) -> bool:
    """The existing object is still there, without the label a refused write would have added."""
    return "labels" not in admin.get(namespace, plural=plural)["metadata"]


# 1. (and 7.) edit, and admin (the chart aggregates into both), write claims in their namespace, and only there

@pytest.mark.parametrize("role", WRITERS)
def test_claims_are_created_patched_and_deleted_in_the_bound_namespace_only(setup: Setup, role: str) -> None:
    user, name = setup.user(role), f"c-{role}"
    user.create(setup.mine, claim(name))
    user.patch(setup.mine, LABEL, name)
    assert setup.admin.get(setup.mine, name)["metadata"]["labels"] == {"x": "y"}
    user.delete(setup.mine, name)
    assert name not in setup.admin.names(setup.mine)

    writes_refused(user, setup.other)
    assert unchanged(setup.admin, setup.other)


# 2. a claim's status, written by the operator, is visible to whoever may read the claim

@pytest.mark.parametrize("role", ROLES)
def test_a_claims_status_written_by_the_operator_is_visible(setup: Setup, role: str) -> None:
    user = setup.user(role)
    assert user.get(setup.mine)["status"] == OPERATOR_STATUS
    assert [c["status"] for c in user.items(setup.mine) if c["metadata"]["name"] == EXISTING] == [OPERATOR_STATUS]
    assert refused(lambda: user.get(setup.other))


# 3. a claim's status is the operator's: its /status subresource is refused, and the claim's own endpoint drops it

@pytest.mark.parametrize("role", WRITERS)
def test_a_claims_status_cannot_be_written(setup: Setup, role: str) -> None:
    user, name = setup.user(role), f"created-with-status-{role}"
    mine = claim_with_operator_status(setup.admin, setup.mine, f"status-{role}")
    status_writes_refused(user, setup.admin, setup.mine, mine)
    user.patch(setup.mine, {"status": STOLEN}, mine)
    assert setup.admin.get(setup.mine, mine)["status"] == OPERATOR_STATUS
    assert "status" not in user.create(setup.mine, {**claim(name), "status": STOLEN})
    user.delete(setup.mine, name)


# 4. handles, pools, providers and scalings are the operator's: not written, in A or in the operator namespace,
#    nor read there

@pytest.mark.parametrize("plural", OPERATOR_KINDS)
@pytest.mark.parametrize("role", WRITERS)
def test_operator_kinds_are_neither_written_nor_read(setup: Setup, role: str, plural: str) -> None:
    user = setup.user(role)
    writes_refused(user, setup.mine, plural)
    writes_refused(user, setup.operator, plural)
    reads_refused(user, setup.operator, plural)
    assert unchanged(setup.admin, setup.operator, plural)


# 5. nothing of namespace B is readable

@pytest.mark.parametrize("role", ROLES)
def test_claims_in_another_namespace_cannot_be_read(setup: Setup, role: str) -> None:
    user = setup.user(role)
    reads_allowed(user, setup.mine)
    reads_refused(user, setup.other)


# 6. view reads claims in A and can do nothing more

def test_view_reads_claims_and_can_do_nothing_more(setup: Setup) -> None:
    user = setup.user("view")
    reads_allowed(user, setup.mine)
    writes_refused(user, setup.mine)
    own = claim_with_operator_status(setup.admin, setup.mine, "status-view")
    status_writes_refused(user, setup.admin, setup.mine, own)
    assert unchanged(setup.admin, setup.mine)


# 7. admin and edit get exactly the same rights on claims, as the API server's authorizer reports them

def claim_verbs(user: User, namespace: str) -> dict[str, set[str]]:
    """resource -> verbs the API server's authorizer grants ``user`` on claims in ``namespace``."""
    review = client.AuthorizationV1Api(user.api_client()).create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace)))
    assert review.status is not None
    verbs: dict[str, set[str]] = {}
    for rule in review.status.resource_rules:
        if D in (rule.api_groups or []) or "*" in (rule.api_groups or []):
            for resource in rule.resources or []:
                if resource.startswith(CLAIMS) or resource == "*":
                    verbs.setdefault(resource, set()).update(rule.verbs)
    return verbs


def test_admin_gets_the_same_claim_rights_as_edit(setup: Setup) -> None:
    edit = claim_verbs(setup.users["edit"], setup.mine)
    assert edit == {CLAIMS: {"get", "list", "watch", "create", "update", "patch", "delete"}}
    assert claim_verbs(setup.users["admin"], setup.mine) == edit
    assert claim_verbs(setup.users["view"], setup.mine) == {CLAIMS: {"get", "list", "watch"}}

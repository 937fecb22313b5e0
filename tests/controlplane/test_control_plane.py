"""The control plane the end-to-end tests run on behaves as a real cluster does: it authenticates and authorizes
every request, mints service-account tokens, serves Poolboy's CRDs as they are, collects garbage, empties deleted
namespaces, survives an API server restart and answers a watch from a compacted revision with 410 Gone."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
import uuid

import pytest
from kubernetes import client, watch

from controlplane.testing import ControlPlane
from tests.waiting import wait_for

GROUP, V1 = "poolboy.gpte.redhat.com", "v1"


def namespace(cluster: ControlPlane, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": name}})
    return name


def test_a_request_without_credentials_is_refused(control_plane: ControlPlane) -> None:
    context = ssl.create_default_context(cafile=str(control_plane.dir / "pki" / "ca.crt"))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{control_plane.apiserver_url}/api/v1/namespaces/default/configmaps",
                               context=context, timeout=10)
    assert refused.value.code in (401, 403)  # anonymous: unauthenticated, or authenticated as nobody with rights


def test_a_named_user_has_only_the_rights_rbac_grants(control_plane: ControlPlane) -> None:
    ns = namespace(control_plane, "rbac")
    user = control_plane.add_user("alice", ["developers"])
    core = client.CoreV1Api(user.api_client())
    with pytest.raises(client.ApiException) as refused:
        core.list_namespaced_config_map(ns)
    assert refused.value.status == 403
    assert 'User "alice"' in json.loads(refused.value.body)["message"]
    rbac = client.RbacAuthorizationV1Api(control_plane.api_client())
    rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "developers-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "developers"}],
    })
    wait_for(lambda: core.list_namespaced_config_map(ns) is not None, timeout=10,
             message="the group's binding takes effect")
    with pytest.raises(client.ApiException) as still_refused:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "x"}})
    assert still_refused.value.status == 403


def test_token_request_mints_a_token_the_api_server_accepts(control_plane: ControlPlane) -> None:
    ns = namespace(control_plane, "token")
    core = client.CoreV1Api(control_plane.api_client())
    core.create_namespaced_service_account(ns, {"metadata": {"name": "robot"}})
    token = core.create_namespaced_service_account_token(
        "robot", ns, {"spec": {"expirationSeconds": 600}}).status.token
    configuration = client.Configuration()
    configuration.host = control_plane.url
    configuration.ssl_ca_cert = str(control_plane.dir / "pki" / "ca.crt")
    configuration.api_key = {"authorization": f"Bearer {token}"}
    review = client.AuthenticationV1Api(client.ApiClient(configuration)).create_self_subject_review({})
    assert review.status.user_info.username == f"system:serviceaccount:{ns}:robot"


def test_poolboy_crds_are_served_with_their_columns_and_subresources(control_plane: ControlPlane) -> None:
    extensions = client.ApiextensionsV1Api(control_plane.api_client())
    crds = {crd.spec.names.kind: crd for crd in extensions.list_custom_resource_definition().items
            if crd.spec.group == GROUP}
    assert {"ResourceClaim", "ResourceHandle", "ResourcePool", "ResourceProvider"} <= set(crds)
    for crd in crds.values():
        established = {c.type: c.status for c in crd.status.conditions}
        assert established.get("Established") == "True", crd.metadata.name
    pool = crds["ResourcePool"].spec.versions[0]
    assert pool.subresources.status is not None and pool.subresources.scale is not None
    table = control_plane.request("GET", f"/apis/{GROUP}/{V1}/resourcepools",
                                  headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert "Synced" in [column["name"] for column in table["columnDefinitions"]]


def test_garbage_collector_deletes_dependents_of_a_deleted_owner(control_plane: ControlPlane) -> None:
    ns = namespace(control_plane, "gc")
    core = client.CoreV1Api(control_plane.api_client())
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "dependent", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]}})
    core.delete_namespaced_config_map("owner", ns)
    wait_for(lambda: "dependent" not in [c.metadata.name for c in core.list_namespaced_config_map(ns).items],
             timeout=60, interval=0.2, message="the dependent collected")


def test_a_deleted_namespace_is_emptied_and_removed(control_plane: ControlPlane) -> None:
    ns = namespace(control_plane, "doomed")
    core = client.CoreV1Api(control_plane.api_client())
    core.create_namespaced_config_map(ns, {"metadata": {"name": "content"}})
    core.delete_namespace(ns)
    wait_for(lambda: ns not in [n.metadata.name for n in core.list_namespace().items], timeout=60, interval=0.2,
             message="namespace removed")


def test_the_fault_proxy_injects_errors_and_passes_the_caller_on(control_plane: ControlPlane) -> None:
    user = control_plane.add_user("bob", ["testers"])
    review = client.AuthenticationV1Api(user.api_client()).create_self_subject_review({})
    assert review.status.user_info.username == "bob"
    assert "testers" in review.status.user_info.groups
    control_plane.set_faults(error_rate=1.0, codes=[503], verbs=["list"], kinds=["configmaps"])
    try:
        with pytest.raises(client.ApiException) as injected:
            client.CoreV1Api(control_plane.api_client()).list_namespaced_config_map("default")
        assert injected.value.status == 503
    finally:
        control_plane.clear_faults()
    client.CoreV1Api(control_plane.api_client()).list_namespaced_config_map("default")


def test_the_fault_proxy_commits_then_fails_a_create(control_plane: ControlPlane) -> None:
    """``after_commit``: kube-apiserver stores the object, the client is answered the injected error."""
    ns = namespace(control_plane, "commit")
    core = client.CoreV1Api(control_plane.api_client())
    control_plane.set_faults(error_rate=1.0, codes=[500], verbs=["create"], kinds=["configmaps"], after_commit=True)
    try:
        with pytest.raises(client.ApiException) as injected:
            core.create_namespaced_config_map(ns, {"metadata": {"name": "stored"}})
        assert injected.value.status == 500
        with pytest.raises(client.ApiException) as own:
            core.create_namespaced_config_map(ns, {"metadata": {"name": "stored"}})
        assert own.value.status == 409, "a request the API server refuses is answered with its own error"
    finally:
        control_plane.clear_faults()
    assert core.read_namespaced_config_map("stored", ns).metadata.name == "stored", "the create was not stored"


def test_a_watch_from_a_compacted_revision_meets_410_gone_after_a_restart(control_plane: ControlPlane) -> None:
    ns = namespace(control_plane, "compact")
    core = client.CoreV1Api(control_plane.api_client())
    old = core.create_namespaced_config_map(ns, {"metadata": {"name": "first"}}).metadata.resource_version
    for index in range(3):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"later-{index}"}})
    control_plane.compact_etcd()
    control_plane.restart_apiserver()  # its watch cache starts again from the compacted store
    core = client.CoreV1Api(control_plane.api_client())
    assert core.read_namespaced_config_map("first", ns).metadata.resource_version == old  # the data survived
    with pytest.raises(client.ApiException) as gone:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=old, timeout_seconds=5):
            pass
    assert gone.value.status == 410

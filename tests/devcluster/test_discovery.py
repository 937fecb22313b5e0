"""Discovery: what clients (kubectl, the dynamic client, operators) read before they can talk to a kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.devcluster.kube import Crd, delete_crd, raw, raw_ok, unique
from tests.waiting import wait_for


def resource(resource_list: dict[str, Any], name: str) -> dict[str, Any]:
    found = [r for r in resource_list["resources"] if r["name"] == name]
    assert found, f"{name} not in {[r['name'] for r in resource_list['resources']]}"
    return found[0]


def group_names(api: client.ApiClient) -> set[str]:
    return {g["name"] for g in raw_ok(api, "GET", "/apis")["groups"]}


def test_version_reports_git_version(api: client.ApiClient) -> None:
    info = client.VersionApi(api).get_code()
    assert info.git_version.startswith("v")
    assert info.major and info.minor


def test_healthz_readyz_livez_answer_ok(api: client.ApiClient) -> None:
    for path in ("/healthz", "/readyz", "/livez"):
        status, _, body = raw(api, "GET", path, headers={"Accept": "*/*"})
        assert (status, body) == (200, "ok"), path


def test_api_lists_core_version(api: client.ApiClient) -> None:
    body = raw_ok(api, "GET", "/api")
    assert body["kind"] == "APIVersions"
    assert "v1" in body["versions"]
    assert client.CoreApi(api).get_api_versions().versions == body["versions"]


def test_apis_lists_builtin_groups_with_preferred_version(api: client.ApiClient) -> None:
    body = raw_ok(api, "GET", "/apis")
    assert body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in body["groups"]}
    for name in ("apiextensions.k8s.io", "coordination.k8s.io", "events.k8s.io"):
        assert name in groups, name
        assert groups[name]["preferredVersion"]["groupVersion"] == f"{name}/v1"
        assert {"groupVersion": f"{name}/v1", "version": "v1"} in groups[name]["versions"]


def test_core_v1_resource_list(api: client.ApiClient) -> None:
    body = raw_ok(api, "GET", "/api/v1")
    assert body["kind"] == "APIResourceList"
    assert body["groupVersion"] == "v1"
    configmaps = resource(body, "configmaps")
    assert configmaps["kind"] == "ConfigMap" and configmaps["namespaced"] is True
    assert {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"} <= set(
        configmaps["verbs"])
    assert resource(body, "namespaces")["namespaced"] is False
    assert "namespaces/status" in {r["name"] for r in body["resources"]}
    for name in ("secrets", "serviceaccounts", "events"):
        assert resource(body, name)["namespaced"] is True


def test_group_version_resource_lists(api: client.ApiClient) -> None:
    leases = resource(raw_ok(api, "GET", "/apis/coordination.k8s.io/v1"), "leases")
    assert (leases["kind"], leases["namespaced"]) == ("Lease", True)
    crds = raw_ok(api, "GET", "/apis/apiextensions.k8s.io/v1")
    assert crds["groupVersion"] == "apiextensions.k8s.io/v1"
    assert resource(crds, "customresourcedefinitions")["namespaced"] is False
    assert resource(crds, "customresourcedefinitions")["shortNames"] == ["crd", "crds"]
    assert resource(raw_ok(api, "GET", "/apis/events.k8s.io/v1"), "events")["kind"] == "Event"


def test_unknown_group_version_is_404(api: client.ApiClient) -> None:
    status, _, _ = raw(api, "GET", f"/apis/{unique('nope')}.example.com/v1")
    assert status == 404


def test_runtime_crd_appears_in_discovery_with_short_names(api: client.ApiClient, widgets: Crd) -> None:
    assert widgets.group in group_names(api)
    body = raw_ok(api, "GET", f"/apis/{widgets.group}/{widgets.version}")
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == widgets.api_version
    entry = resource(body, widgets.plural)
    assert entry["kind"] == widgets.kind
    assert entry["singularName"] == widgets.singular
    assert entry["namespaced"] is True
    assert entry["shortNames"] == [widgets.short_name]
    assert {"create", "get", "list", "watch", "patch", "update", "delete", "deletecollection"} <= set(entry["verbs"])
    assert f"{widgets.plural}/status" in {r["name"] for r in body["resources"]}


def test_cluster_scoped_crd_discovered_as_not_namespaced(api: client.ApiClient, make_crd: Any) -> None:
    crd = make_crd(kind="Gadget", scope="Cluster")
    entry = resource(raw_ok(api, "GET", f"/apis/{crd.group}/{crd.version}"), crd.plural)
    assert entry["namespaced"] is False


def test_deleted_crd_disappears_from_discovery(api: client.ApiClient, make_crd: Any) -> None:
    crd = make_crd(kind="Ephemeral")
    delete_crd(api, crd)
    wait_for(lambda: raw(api, "GET", f"/apis/{crd.group}/{crd.version}")[0] == 404, timeout=10,
             message="group version gone from discovery")
    assert crd.group not in group_names(api)


def test_dynamic_client_resolves_runtime_crd(api: client.ApiClient, widgets: Crd, namespace: str,
                                             tmp_path: Path) -> None:
    dynamic = DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
    kind = dynamic.resources.get(api_version=widgets.api_version, kind=widgets.kind)
    assert kind.namespaced and kind.name == widgets.plural
    kind.create(body=widgets.body("dyn", {"size": 1}), namespace=namespace)
    assert kind.get(name="dyn", namespace=namespace).spec.size == 1


def test_dynamic_client_resolves_core_kinds(api: client.ApiClient, namespace: str, tmp_path: Path) -> None:
    dynamic = DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
    configmaps = dynamic.resources.get(api_version="v1", kind="ConfigMap")
    configmaps.create(body={"metadata": {"name": "dyn", "labels": {"via": "dynamic"}}, "data": {"a": "1"}},
                      namespace=namespace)
    listed = configmaps.get(namespace=namespace, label_selector="via=dynamic")
    assert listed.kind == "ConfigMapList"
    assert [item.metadata.name for item in listed.items] == ["dyn"]
    leases = dynamic.resources.get(api_version="coordination.k8s.io/v1", kind="Lease")
    assert leases.namespaced

"""The whole chart installed, upgraded and uninstalled by ``helm`` on the real API server, which judges every object
with its own validation and admission (no dry run, no client-side check: helm applies server-side). Each release
has a namespace of its own, labelled to enforce the restricted Pod Security Standard; the Deployment and ReplicaSet
controllers turn the Deployments into Pod objects there, so PodSecurity admission judges the pods the chart would
run. Nothing schedules or runs them (helm/README.md, "Installed on a real API server")."""

from __future__ import annotations

import urllib.error
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from controlplane.testing import ControlPlane
from tests.controlplane.helm_release import (
    INSTANCE,
    RESTRICTED,
    Discovery,
    Release,
    create_namespace,
    differences,
    pod_security_warnings,
)
from tests.controlplane.operator_crds import OPERATOR_CRDS
from tests.waiting import wait_for

pytestmark = pytest.mark.helm

D, V1 = "poolboy.gpte.redhat.com", "v1"
OTHER_DOMAIN = "chart-install.gpte.redhat.com"
KEPT_DOMAIN = "chart-kept.gpte.redhat.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#: what an operator running Poolboy highly available sets: more watchers, autoscaled workers in prefork pools,
#: PodDisruptionBudgets, a hard spread, NetworkPolicies, a Sentinel Redis over TLS (its URL from a Secret), Flower,
#: a ServiceMonitor, the dashboard and JSON logs
HA: dict[str, Any] = {
    "watcher": {"replicas": 3},
    "beat": {"replicas": 2},
    "workers": {"pool": "prefork", "groupDefaults": {"autoscaling": {"enabled": True}}},
    "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
    "topologySpread": {"enabled": True, "whenUnsatisfiable": "DoNotSchedule"},
    "networkPolicy": {"enabled": True},
    "redis": {"existingSecret": {"name": "poolboy-redis-url", "key": "url"}, "sentinel": {"masterName": "mymaster"},
              "tls": {"caSecret": {"name": "redis-ca", "key": "ca.crt"}}},
    "flower": {"enabled": True},
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
    "dashboard": {"enabled": True},
    "logFormat": "json",
}
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "anarchy": {"anarchy": {"enabled": True}},
    "ha": HA,
    # KEDA instead of the HPAs: a ScaledObject per group, the bundled Redis's TriggerAuthentication, KEDA let in
    "keda": {"workers": {"groupDefaults": {"keda": {"enabled": True}}}},
    # the bundled Redis over TLS (its certificate from a Secret), KEDA with its own Redis user over TLS, Flower
    # allowed to command the workers, the project image pinned by digest
    "redis-tls": {"redis": {"tls": {"enabled": True, "existingSecret": "redis-tls"}},
                  "workers": {"groupDefaults": {"keda": {"enabled": True}}},
                  "flower": {"enabled": True, "remoteControl": True}, "image": {"digest": "sha256:" + "0" * 64}},
    "other-domain": {"domain": OTHER_DOMAIN, "crds": {"renderForDomain": True}},
}


@pytest.fixture(scope="module")
def discovery(control_plane: ControlPlane) -> Iterator[Discovery]:
    """The API server's discovery, with the other operators' CRDs installed for this module; those and the CRDs
    that releases of other domains render (and keep) are deleted after it."""
    control_plane.install(OPERATOR_CRDS)
    yield Discovery(control_plane)
    ours = {c["metadata"]["name"] for c in OPERATOR_CRDS}
    for served in control_plane.request("GET", CRDS)["items"]:
        name = served["metadata"]["name"]
        if name in ours or name.endswith((f".{OTHER_DOMAIN}", f".{KEPT_DOMAIN}")):
            control_plane.request("DELETE", f"{CRDS}/{name}")


def new_release(cluster: ControlPlane, workdir: Path, prefix: str) -> Release:
    namespace = create_namespace(cluster, prefix, RESTRICTED)
    return Release(cluster, f"{prefix}-{uuid.uuid4().hex[:4]}", namespace, workdir)


def removed(cluster: ControlPlane, release: Release) -> None:
    """Uninstall the release if helm still has it, and delete its namespace."""
    release.helm("uninstall", release.name, "--ignore-not-found")
    cluster.request("DELETE", f"/api/v1/namespaces/{release.namespace}")


@pytest.fixture(scope="module", params=list(CONFIGURATIONS))
def installed(request: pytest.FixtureRequest, control_plane: ControlPlane, discovery: Discovery,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Release, CompletedProcess[str]]]:
    """The chart installed with one configuration, and helm's answer; uninstalled afterwards."""
    release = new_release(control_plane, tmp_path_factory.mktemp("chart"), "chart")
    try:
        yield release, release.install(CONFIGURATIONS[request.param])
    finally:
        removed(control_plane, release)


@pytest.fixture
def fresh_release(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Release]:
    """A release not installed yet, for a test that installs it itself."""
    release = new_release(control_plane, tmp_path, "release")
    yield release
    removed(control_plane, release)


@pytest.fixture
def team(control_plane: ControlPlane) -> Iterator[str]:
    """A namespace besides the release's, where the chart puts objects when told to (Roles, the dashboard)."""
    name = create_namespace(control_plane, "team")
    yield name
    control_plane.request("DELETE", f"/api/v1/namespaces/{name}")


def not_stored_as_rendered(discovery: Discovery, release: Release) -> dict[str, list[str]]:
    """``kind/name`` -> what the server lacks of it ("absent" when it has no such object)."""
    found = {}
    for manifest in release.manifest():
        stored = discovery.stored(manifest, release.namespace)
        wrong = ["absent"] if stored is None else differences(manifest, stored)
        if wrong:
            found[f"{manifest['kind']}/{manifest['metadata']['name']}"] = wrong
    return found


def keyed(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{m['kind']} {m['metadata'].get('namespace', '')}/{m['metadata']['name']}": m for m in manifests}


def deployments(release: Release) -> list[dict[str, Any]]:
    return [m for m in release.manifest() if m["kind"] == "Deployment"]


def pods_of(cluster: ControlPlane, namespace: str, deployment: dict[str, Any]) -> list[dict[str, Any]]:
    labels = deployment["spec"]["selector"]["matchLabels"]
    selector = urllib.parse.quote(",".join(f"{key}={value}" for key, value in labels.items()))
    return list(cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")["items"])


def every_pod_created(cluster: ControlPlane, namespace: str, rendered: list[dict[str, Any]]) -> bool:
    """Each Deployment has as many Pod objects as its replicas (the server's default of 1 under an autoscaler)."""
    for deployment in rendered:
        path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment['metadata']['name']}"
        if len(pods_of(cluster, namespace, deployment)) != cluster.request("GET", path)["spec"]["replicas"]:
            return False
    return True


def replica_failures(cluster: ControlPlane, namespace: str) -> list[str]:
    """The messages of ReplicaSets that could not create a pod (their ``ReplicaFailure`` condition)."""
    sets = cluster.request("GET", f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    return [f"{rs['metadata']['name']}: {c.get('message')}" for rs in sets
            for c in rs.get("status", {}).get("conditions", []) if c["type"] == "ReplicaFailure"]


def stored_object(cluster: ControlPlane, path: str) -> dict[str, Any]:
    return dict(cluster.request("GET", path))


def secret_data(cluster: ControlPlane, namespace: str, name: str) -> dict[str, str]:
    return dict(stored_object(cluster, f"/api/v1/namespaces/{namespace}/secrets/{name}")["data"])


def poolboy_args(cluster: ControlPlane, namespace: str) -> dict[str, list[str]]:
    """Deployment name -> its container's arguments as the server holds them, for Poolboy's own components."""
    listed = cluster.request("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments")["items"]
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["args"] for d in listed
            if d["metadata"]["labels"]["app.kubernetes.io/component"] != "redis"}


def kinds(found: list[str]) -> set[str]:
    return {entry.split(" ", 1)[0] for entry in found}


def test_every_rendered_object_is_stored_as_rendered(installed: tuple[Release, CompletedProcess[str]],
                                                     discovery: Discovery) -> None:
    release, _ = installed
    assert release.manifest(), "helm rendered nothing"
    assert not_stored_as_rendered(discovery, release) == {}


def test_every_deployment_creates_its_pods_under_restricted_pod_security(
        installed: tuple[Release, CompletedProcess[str]], control_plane: ControlPlane) -> None:
    release, answer = installed
    assert pod_security_warnings(answer) == []
    rendered = deployments(release)
    wait_for(lambda: every_pod_created(control_plane, release.namespace, rendered), timeout=60, interval=0.2,
             message="a Pod object for every replica of every Deployment")
    assert replica_failures(control_plane, release.namespace) == []


def test_the_helm_test_pod_is_admitted_under_restricted_pod_security(
        installed: tuple[Release, CompletedProcess[str]], control_plane: ControlPlane) -> None:
    release, _ = installed
    [pod] = [hook for hook in release.hooks() if hook["kind"] == "Pod"]
    pods = f"/api/v1/namespaces/{release.namespace}/pods"
    try:
        created = control_plane.request("POST", pods, pod)
    except urllib.error.HTTPError as error:
        raise AssertionError(f"the helm test pod was refused: {error.read().decode()}") from error
    assert created["metadata"]["name"] == pod["metadata"]["name"]
    control_plane.request("DELETE", f"{pods}/{pod['metadata']['name']}")


def test_restricted_pod_security_refuses_the_chart_with_privilege_escalation(
        control_plane: ControlPlane, discovery: Discovery, fresh_release: Release) -> None:
    answer = fresh_release.install({"securityContext": {"allowPrivilegeEscalation": True}})
    assert pod_security_warnings(answer), answer.stderr
    failures = wait_for(lambda: replica_failures(control_plane, fresh_release.namespace), timeout=60, interval=0.2,
                        message="a ReplicaSet that may not create its pods")
    assert all("violates PodSecurity" in failure for failure in failures), failures
    assert [pods_of(control_plane, fresh_release.namespace, d) for d in deployments(fresh_release)] == \
        [[] for _ in deployments(fresh_release)]


def test_upgrade_applies_changed_values_and_removes_dropped_objects(
        control_plane: ControlPlane, discovery: Discovery, fresh_release: Release, team: str) -> None:
    release, fullname = fresh_release, f"{fresh_release.name}-poolboy"
    release.install({"anarchy": {"enabled": True}, "flower": {"enabled": True}})
    passwords = {name: secret_data(control_plane, release.namespace, f"{fullname}-{name}")
                 for name in ("redis", "flower-auth")}
    before = keyed(release.manifest())

    release.upgrade({
        "flower": {"enabled": True}, "watcher": {"replicas": 3}, "logLevel": "DEBUG",
        "workers": {"groups": {"claims": {"replicas": 4}}},
        "managedResources": [{"apiGroups": [""], "resources": ["configmaps"]},
                             {"apiGroups": ["apps"], "resources": ["deployments"], "namespaces": [team]}],
        "networkPolicy": {"enabled": False}, "podDisruptionBudget": {"enabled": False}})

    assert not_stored_as_rendered(discovery, release) == {}
    after = keyed(release.manifest())
    dropped = {key: m for key, m in before.items() if key not in after}
    assert {f"ClusterRole /{fullname}-anarchy-runner", f"ClusterRoleBinding /{fullname}-anarchy-runner",
            f"NetworkPolicy /{fullname}-watcher", f"PodDisruptionBudget /{fullname}-watcher"} <= set(dropped)
    assert [key for key, m in dropped.items() if discovery.stored(m, release.namespace) is not None] == []
    apps = f"/apis/apps/v1/namespaces/{release.namespace}/deployments"
    assert stored_object(control_plane, f"{apps}/{fullname}-watcher")["spec"]["replicas"] == 3
    assert stored_object(control_plane, f"{apps}/{fullname}-worker-claims")["spec"]["replicas"] == 4
    args = poolboy_args(control_plane, release.namespace)
    assert [name for name, given in args.items() if "DEBUG" not in given] == [] and len(args) == 7
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    assert stored_object(control_plane, f"{rbac}/clusterroles/{fullname}-worker-managed-resources")["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch", "delete"]}]
    assert stored_object(control_plane, f"{rbac}/namespaces/{team}/roles/{fullname}-watcher-managed-resources")[
        "rules"] == [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch"]}]
    # the generated passwords are read back from the server (helm's lookup), not generated anew
    assert {name: secret_data(control_plane, release.namespace, f"{fullname}-{name}") for name in passwords} == \
        passwords


def test_uninstall_removes_every_object_of_the_release(control_plane: ControlPlane, discovery: Discovery,
                                                       fresh_release: Release, team: str) -> None:
    release = fresh_release
    release.install({**HA, "anarchy": {"enabled": True}, "dashboard": {"enabled": True, "namespace": team},
                     "managedResources": [{"apiGroups": [""], "resources": ["configmaps"], "namespaces": [team]},
                                          {"apiGroups": ["apps"], "resources": ["deployments"]}]})
    rendered = deployments(release)
    wait_for(lambda: every_pod_created(control_plane, release.namespace, rendered), timeout=60, interval=0.2,
             message="the Deployments' ReplicaSets and Pods")
    selector = f"{INSTANCE}={release.name}"
    before = discovery.labelled(selector)
    # the search sees cluster-scoped RBAC, objects in another namespace and what the controllers made
    assert {"ClusterRole", "ClusterRoleBinding", "ReplicaSet", "Pod"} <= kinds(before)
    assert [entry for entry in before if f" {team}/" in entry] != []
    assert discovery.labelled(f"owner=helm,name={release.name}") != []  # helm's record of the release

    release.uninstall()

    wait_for(lambda: discovery.labelled(selector) == [], timeout=60, interval=0.5,
             message="no object labelled by the release, of any kind, in any namespace")
    assert discovery.labelled(f"owner=helm,name={release.name}") == []


def test_uninstall_keeps_the_crds_a_release_rendered_and_the_claims_in_them(
        control_plane: ControlPlane, discovery: Discovery, fresh_release: Release, team: str) -> None:
    fresh_release.install({"domain": KEPT_DOMAIN, "crds": {"renderForDomain": True}})
    claims = f"/apis/{KEPT_DOMAIN}/{V1}/namespaces/{team}/resourceclaims"
    wait_for(lambda: control_plane.request("GET", claims), timeout=30, interval=0.1,
             message="the rendered CRD served (Established, its storage ready)")
    control_plane.request("POST", claims, {"apiVersion": f"{KEPT_DOMAIN}/{V1}", "kind": "ResourceClaim",
                                           "metadata": {"name": "kept"}, "spec": {"provider": {"name": "any"}}})

    fresh_release.uninstall()

    for plural in ("resourceclaims", "resourcehandles", "resourcepools", "resourceproviders"):
        kept = control_plane.request("GET", f"{CRDS}/{plural}.{KEPT_DOMAIN}")["metadata"]
        assert "deletionTimestamp" not in kept, f"{plural} is being deleted"
    assert [c["metadata"]["name"] for c in control_plane.request("GET", claims)["items"]] == ["kept"]

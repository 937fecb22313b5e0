"""kubectl against devcluster: the commands a user of ``poolboy dev`` types must work as on a real cluster."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from devcluster.testing import DevCluster
from tests.devcluster.kube import Crd, Objects, expect_error

pytestmark = [pytest.mark.kubectl]


@pytest.fixture()
def kubectl(devcluster: DevCluster) -> Any:
    """Run kubectl against the devcluster; fail the test with kubectl's stderr when it exits non-zero."""

    def run(*args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["kubectl", "--kubeconfig", str(devcluster.kubeconfig), *args],
                                capture_output=True, text=True, timeout=timeout)
        if check:
            assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result

    return run


def resource(crd: Crd) -> str:
    return f"{crd.plural}.{crd.group}"


def write(path: Path, obj: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(obj))
    return str(path)


def test_get_table(kubectl: Any, core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "shown"}, "data": {"a": "1", "b": "2"}})
    out = kubectl("get", "configmaps", "-n", namespace, "shown").stdout.splitlines()
    assert out[0].split()[:2] == ["NAME", "DATA"]
    assert out[1].split()[:2] == ["shown", "2"]


def test_get_json(kubectl: Any, core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "shown", "labels": {"k": "v"}}})
    listed = json.loads(kubectl("get", "configmaps", "-n", namespace, "-l", "k=v", "-o", "json").stdout)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["shown"]
    single = json.loads(kubectl("get", "configmap", "shown", "-n", namespace, "-o", "json").stdout)
    assert (single["kind"], single["metadata"]["namespace"]) == ("ConfigMap", namespace)


def test_get_custom_resource_by_short_name(kubectl: Any, widget_objects: Objects, namespace: str) -> None:
    widget_objects.create(widget_objects.crd.body("short"))
    out = kubectl("get", widget_objects.crd.short_name, "-n", namespace, "-o", "name").stdout.split()
    assert out == [f"{widget_objects.crd.singular}.{widget_objects.crd.group}/short"]
    table = kubectl("get", widget_objects.crd.short_name, "-n", namespace).stdout
    assert "NAME" in table and "short" in table


def test_apply_configmap_create_then_update(kubectl: Any, core: client.CoreV1Api, namespace: str,
                                            tmp_path: Path) -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "namespace": namespace},
                "data": {"a": "1"}}
    assert "created" in kubectl("apply", "-f", write(tmp_path / "cm.yaml", manifest)).stdout
    manifest["data"] = {"a": "2", "b": "3"}
    assert "configured" in kubectl("apply", "-f", write(tmp_path / "cm.yaml", manifest)).stdout
    assert core.read_namespaced_config_map("applied", namespace).data == {"a": "2", "b": "3"}
    assert "unchanged" in kubectl("apply", "-f", str(tmp_path / "cm.yaml")).stdout


def test_apply_custom_resource_create_then_update(kubectl: Any, widget_objects: Objects, namespace: str,
                                                  tmp_path: Path) -> None:
    manifest = widget_objects.crd.body("applied", {"size": 1, "drop": "me"}, namespace=namespace)
    assert "created" in kubectl("apply", "-f", write(tmp_path / "w.yaml", manifest)).stdout
    manifest["spec"] = {"size": 2}
    assert "configured" in kubectl("apply", "-f", write(tmp_path / "w.yaml", manifest)).stdout
    assert widget_objects.get("applied")["spec"] == {"size": 2}


def test_patch_merge_and_json(kubectl: Any, widget_objects: Objects, namespace: str) -> None:
    widget_objects.create(widget_objects.crd.body("p", {"a": 1, "b": 2}))
    target = [resource(widget_objects.crd), "p", "-n", namespace]
    kubectl("patch", *target, "--type", "merge", "-p", json.dumps({"spec": {"a": 10, "b": None}}))
    assert widget_objects.get("p")["spec"] == {"a": 10}
    kubectl("patch", *target, "--type", "json", "-p", json.dumps([{"op": "add", "path": "/spec/c", "value": 3}]))
    assert widget_objects.get("p")["spec"] == {"a": 10, "c": 3}
    failed = kubectl("patch", *target, "--type", "json", "-p",
                     json.dumps([{"op": "test", "path": "/spec/a", "value": 0}]), check=False)
    assert failed.returncode != 0


def test_delete(kubectl: Any, core: client.CoreV1Api, widget_objects: Objects, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "gone"}})
    widget_objects.create(widget_objects.crd.body("gone"))
    kubectl("delete", "configmap", "gone", "-n", namespace)
    kubectl("delete", resource(widget_objects.crd), "gone", "-n", namespace)
    expect_error(404, core.read_namespaced_config_map, "gone", namespace)
    assert widget_objects.gone("gone")


def wait_while_status_changes(kubectl: Any, objects: Objects, name: str, condition: str,
                              status: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """Run ``kubectl wait`` and patch the status while it waits; kubectl must notice and exit 0."""
    timer = threading.Timer(0.7, objects.patch_status, args=(name, {"status": status}))
    timer.start()
    try:
        return kubectl("wait", f"--for={condition}", f"{resource(objects.crd)}/{name}", "-n",
                       objects.namespace, "--timeout=20s", timeout=40)
    finally:
        timer.cancel()
        timer.join()


def test_wait_for_jsonpath(kubectl: Any, widget_objects: Objects) -> None:
    widget_objects.create(widget_objects.crd.body("waited"))
    result = wait_while_status_changes(kubectl, widget_objects, "waited", "jsonpath={.status.phase}=Ready",
                                       {"phase": "Ready"})
    assert "condition met" in result.stdout


def test_wait_for_condition(kubectl: Any, widget_objects: Objects) -> None:
    widget_objects.create(widget_objects.crd.body("waited"))
    ready = {"conditions": [{"type": "Ready", "status": "True", "reason": "Done", "message": "",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    result = wait_while_status_changes(kubectl, widget_objects, "waited", "condition=Ready", ready)
    assert "condition met" in result.stdout


def test_describe(kubectl: Any, core: client.CoreV1Api, widget_objects: Objects, namespace: str) -> None:
    widget_objects.create(widget_objects.crd.body("described", {"size": 3}, labels={"k": "v"}))
    out = kubectl("describe", resource(widget_objects.crd), "described", "-n", namespace).stdout
    assert "Name:" in out and "described" in out
    assert namespace in out and "k=v" in out
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}, "data": {"key": "value"}})
    out = kubectl("describe", "configmap", "cm", "-n", namespace).stdout
    assert "key" in out and "value" in out


def test_api_resources(kubectl: Any, widgets: Crd) -> None:
    rows = [line.split() for line in kubectl("api-resources").stdout.splitlines()[1:]]
    first = {row[0]: row for row in rows}
    assert "configmaps" in first and "cm" in first["configmaps"]
    assert "namespaces" in first and "leases" in first and "customresourcedefinitions" in first
    assert widgets.plural in first and widgets.short_name in first[widgets.plural]


def test_explain_custom_resource_field(kubectl: Any) -> None:
    """`kubectl explain` finds a CRD's schema through the OpenAPI v3 document (Poolboy's CRDs are loaded)."""
    out = kubectl("explain", "resourceclaims.spec.lifespan").stdout
    assert "KIND:       ResourceClaim" in out
    assert "start" in out and "end" in out


def test_explain_builtin_kind(kubectl: Any) -> None:
    assert "KIND:       ConfigMap" in kubectl("explain", "configmap").stdout


def test_scale_and_get_the_scale_subresource(kubectl: Any, api: client.ApiClient, make_crd: Any,
                                             namespace: str) -> None:
    crd = make_crd(kind="Sprocket", scale={
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"})
    objects = Objects(api, crd, namespace)
    objects.create(crd.body("s", {"replicas": 1}))
    assert "scaled" in kubectl("scale", f"{resource(crd)}/s", "-n", namespace, "--replicas=4").stdout
    assert objects.get("s")["spec"]["replicas"] == 4
    stale = kubectl("scale", f"{resource(crd)}/s", "-n", namespace, "--replicas=5", "--current-replicas=3",
                    check=False)
    assert stale.returncode != 0 and objects.get("s")["spec"]["replicas"] == 4
    scale = json.loads(kubectl("get", f"{resource(crd)}/s", "-n", namespace, "--subresource=scale",
                               "-o", "json").stdout)
    assert (scale["kind"], scale["spec"], scale["status"]) == ("Scale", {"replicas": 4}, {"replicas": 0})
    table = kubectl("get", f"{resource(crd)}/s", "-n", namespace, "--subresource=scale").stdout.splitlines()
    assert table[0].split()[0] == "NAME" and table[1].split()[0] == "s"


def test_explain_describes_every_field(kubectl: Any) -> None:
    """Every field a user sets has a description (tests/unit/test_crds.py checks the whole schema)."""
    for field in ("resourceclaims.spec", "resourceclaims.spec.autoDelete", "resourceclaims.spec.autoDetach",
                  "resourceclaims.status.resourceHandle", "resourceproviders.spec"):
        out = kubectl("explain", field).stdout
        assert "<no description>" not in out, f"kubectl explain {field}:\n{out}"


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_printer_columns_show_the_provider_kind_and_a_failing_claim(kubectl: Any, tmp_path: Path,
                                                                    namespace: str) -> None:
    """`kubectl get rprov` names the managed kind of the project's own (templated) example; `kubectl get rclaim`
    shows a failing claim's reason instead of blank columns."""
    provider = yaml.safe_load((EXAMPLES / "10-provider.yaml").read_text())
    provider["metadata"]["namespace"] = namespace
    kubectl("apply", "-f", write(tmp_path / "provider.yaml", provider))
    rows = [line.split() for line in kubectl("get", "rprov", "-n", namespace).stdout.splitlines()]
    assert rows[0][:6] == ["NAME", "API", "VERSION", "KIND", "VALID", "AGE"]
    assert rows[1][:3] == ["hello", "v1", "ConfigMap"]

    claim = {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
             "metadata": {"name": "bad", "namespace": namespace},
             "spec": {"provider": {"name": "hello", "parameterValues": {"greeting": 42}}}}
    kubectl("apply", "-f", write(tmp_path / "claim.yaml", claim))
    condition = {"type": "Synced", "status": "False", "reason": "ValidationFailed", "message": "greeting: 42 is not "
                 "of type 'string'", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}
    kubectl("patch", "rclaim", "bad", "-n", namespace, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"conditions": [condition]}}))
    table = [line.split() for line in kubectl("get", "rclaim", "-n", namespace).stdout.splitlines()]
    assert "SYNCED" in table[0]
    assert table[1][0] == "bad" and "ValidationFailed" in table[1]

"""The control plane's pure parts: the staging pins derived from a Kubernetes release's go.mod, the fault proxy's
reading of a request path, and request counts read from an audit log."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import orjson
import pytest

from controlplane.audit import AuditCounters
from controlplane.proxy import request_target

ROOT = Path(__file__).resolve().parents[2]


def _pin_module():
    spec = importlib.util.spec_from_file_location("pin", ROOT / "controlplane" / "go" / "pin.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RELEASE_GO_MOD = """module k8s.io/kubernetes

go 1.26.0

require (
	go.etcd.io/etcd/server/v3 v3.7.0 // indirect
	k8s.io/api v0.0.0
	k8s.io/apiserver v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apiserver => ./staging/src/k8s.io/apiserver
	k8s.io/sample-controller => ./staging/src/k8s.io/sample-controller
)
"""


def test_every_required_staging_module_is_pinned_to_the_release_and_nothing_else() -> None:
    pin = _pin_module()
    assert pin.staging_pins(RELEASE_GO_MOD, "v1.37.2") == [
        "\tk8s.io/api => k8s.io/api v0.37.2",
        "\tk8s.io/apiserver => k8s.io/apiserver v0.37.2",
    ]  # sample-controller is replaced but not required: not pinned (it is not published for every release)
    assert pin.etcd_version(RELEASE_GO_MOD) == "v3.7.0"


def test_the_committed_go_mod_pins_every_staging_module_of_its_release() -> None:
    go_mod = (ROOT / "controlplane" / "go" / "go.mod").read_text()
    assert "k8s.io/kubernetes v1.37.2" in go_mod
    for module in ("k8s.io/api", "k8s.io/apiserver", "k8s.io/apiextensions-apiserver", "k8s.io/client-go"):
        assert f"{module} => {module} v0.37.2" in go_mod
    assert "./staging" not in go_mod


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    ("GET", "/api/v1/namespaces/ns/configmaps", {}, ("list", "configmaps", "")),
    ("GET", "/api/v1/namespaces/ns/configmaps/x", {}, ("get", "configmaps", "")),
    ("GET", "/api/v1/namespaces/ns/configmaps", {"watch": "true"}, ("watch", "configmaps", "")),
    ("GET", "/api/v1/watch/namespaces/ns/configmaps", {}, ("watch", "configmaps", "")),
    ("GET", "/api/v1/namespaces", {}, ("list", "namespaces", "")),
    ("GET", "/api/v1/namespaces/ns", {}, ("get", "namespaces", "")),
    ("POST", "/apis/poolboy.gpte.redhat.com/v1/namespaces/p/resourceclaims", {},
     ("create", "resourceclaims", "poolboy.gpte.redhat.com")),
    ("PATCH", "/apis/poolboy.gpte.redhat.com/v1/namespaces/p/resourceclaims/c/status", {},
     ("patch", "resourceclaims", "poolboy.gpte.redhat.com")),
    ("DELETE", "/api/v1/namespaces/ns/configmaps", {}, ("deletecollection", "configmaps", "")),
    ("GET", "/apis/apps/v1", {}, None),
    ("GET", "/version", {}, None),
])
def test_the_fault_proxy_reads_verb_and_resource_off_the_request(method, path, query, expected) -> None:
    assert request_target(path, query, method) == expected


def _event(audit_id: str, verb: str, resource: str, namespace: str = "", name: str = "", group: str = "",
           user: str = "alice", stage: str = "ResponseComplete") -> bytes:
    ref = {"resource": resource, "namespace": namespace, "name": name, "apiGroup": group}
    return orjson.dumps({"auditID": audit_id, "stage": stage, "verb": verb, "user": {"username": user},
                         "objectRef": {k: v for k, v in ref.items() if v}}) + b"\n"


def test_audit_counters_count_each_request_once_and_leave_the_control_plane_out(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_bytes(b"".join([
        _event("1", "watch", "configmaps", "ns", stage="ResponseStarted"),
        _event("1", "watch", "configmaps", "ns"),
        _event("2", "patch", "resourceclaims", "ns", "c", group="poolboy.gpte.redhat.com"),
        _event("3", "list", "pods", user="system:kube-controller-manager"),
        _event("4", "get", "secrets", "ns", "s", user="system:serviceaccount:kube-system:namespace-controller"),
    ]) + b'{"auditID": "5", "stage": "Resp')  # a line still being written
    counters = AuditCounters(log)
    items = {(i["verb"], i["resource"], i["namespace"]): i["count"] for i in counters.counters()["items"]}
    assert items == {("watch", "configmaps", "ns"): 1, ("patch", "resourceclaims.poolboy.gpte.redhat.com", "ns"): 1}
    counters.reset()
    with open(log, "ab") as appended:
        appended.write(b'onseComplete"}\n' + _event("6", "get", "configmaps", "ns", "x"))
    assert counters.counters()["by_verb"]["get"] == 1


def test_audit_counters_read_each_line_once_and_count_what_was_appended_since(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_bytes(_event("1", "get", "configmaps", "ns", "a") + b'{"auditID": "2", "stage": "Respo')
    counters = AuditCounters(log)
    assert counters.counters()["by_verb"]["get"] == 1
    assert counters.counters()["by_verb"]["get"] == 1  # read again: nothing new, nothing counted twice
    with open(log, "ab") as appended:  # the half-written line ends, and a watch starts and ends
        appended.write(b'nseComplete", "verb": "get", "objectRef": {"resource": "secrets"}}\n'
                       + _event("3", "watch", "configmaps", "ns", stage="ResponseStarted"))
    assert counters.counters()["by_resource"] == {"configmaps": 2, "secrets": 1}
    with open(log, "ab") as appended:
        appended.write(_event("3", "watch", "configmaps", "ns"))
    assert counters.counters()["by_verb"]["watch"] == 1

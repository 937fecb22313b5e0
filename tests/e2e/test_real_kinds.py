"""Managed resources of the kinds providers manage in the field — a Deployment, a Service, a Secret, a ConfigMap and a
custom resource of another operator's CRD — on the real API server, which adds defaults and normalises values
(docs/behaviour.md#handles): a converged claim makes no write, a user's change still propagates, ``updateFilters``
still refuse what they refuse, and what the server refuses is a clear error, not a crash or a hot loop.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from stack.local import LocalStack
from tests.clusters import E2E_CLUSTER
from tests.e2e.provider_support import NS, condition, status
from tests.e2e.test_resources_claims import User, reference
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(E2E_CLUSTER != "real", reason="devcluster serves neither these kinds nor defaults")]

WIDGETS = "widgets.kinds.example.test"
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": WIDGETS},
    "spec": {"group": "kinds.example.test", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "size": {"type": "string", "default": "medium"},
                     "replicas": {"type": "integer", "default": 1},
                     "color": {"type": "string"}}}}}}}]},
}
#: what a claim asks for: a template per kind, with fields the server defaults left out
TEMPLATES: dict[str, dict[str, Any]] = {
    "deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
            {"name": "web", "image": "registry.example/web:1", "resources": {"requests": {"cpu": "0.5"}}}]}}}},
    "service": {"apiVersion": "v1", "kind": "Service", "metadata": {"labels": {"tier": "front"}},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    "secret": {"apiVersion": "v1", "kind": "Secret", "stringData": {"password": "s3cret"}},
    "configmap": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": "hello"}},
    "widget": {"apiVersion": "kinds.example.test/v1", "kind": "Widget", "spec": {"color": "blue"}},
}
#: broad filters, so that an op undoing a server default would pass them and show as a write; the Service's lets
#: only labels through
FILTERS: dict[str, list[dict[str, Any]]] = {
    "deployment": [{"pathMatch": "/spec/.*"}],
    "service": [{"pathMatch": "/metadata/labels/.*"}],
    "secret": [{"pathMatch": "/stringData.*"}, {"pathMatch": "/data/.*"}, {"pathMatch": "/type"}],
    "configmap": [{"pathMatch": "/data/.*"}],
    "widget": [{"pathMatch": "/spec/.*"}],
}
KINDS = tuple(TEMPLATES)
WRITES = ("create", "update", "patch", "delete")


@pytest.fixture(scope="module")
def widgets(stack: LocalStack) -> None:
    """Another operator's CRD, with defaults in its schema."""
    assert stack.cluster is not None
    stack.cluster.install([WIDGET_CRD])


def kinds_claim(user: User, ns: str, name: str, templates: dict[str, dict[str, Any]] | None = None) -> None:
    for kind in KINDS:
        user.provider(f"{ns}-{kind}", {"override": {"metadata": {"namespace": ns}}, "healthCheck": "true",
                                       "readinessCheck": "true", "updateFilters": FILTERS[kind]})
    chosen = templates or TEMPLATES
    user.claim(ns, name, {"resources": [{"name": kind, "provider": {"name": f"{ns}-{kind}"},
                                         "template": chosen[kind]} for kind in KINDS]})


def writes_in(user: User, ns: str) -> dict[tuple[str, str], int]:
    """Writes the API server served so far to objects in ``ns`` and to the operator's handles, by (verb, resource)."""
    counted: dict[tuple[str, str], int] = {}
    for item in user.api_counters()["items"]:
        inside = item["namespace"] == ns or (item["namespace"] == NS and item["resource"].startswith("resourcehandles"))
        if inside and item["verb"] in WRITES and item["resource"] != "events":
            counted[(item["verb"], item["resource"])] = counted.get((item["verb"], item["resource"]), 0) + item["count"]
    return counted


def live(user: User, claim: dict[str, Any], index: int) -> dict[str, Any]:
    ref = reference(user, claim, index)
    group, _, version = ref["apiVersion"].rpartition("/")
    plural = {"Deployment": "deployments", "Service": "services", "Secret": "secrets", "ConfigMap": "configmaps",
              "Widget": "widgets"}[ref["kind"]]
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    assert user.stack.cluster is not None
    return dict(user.stack.cluster.request("GET", f"{prefix}/namespaces/{ref['namespace']}/{plural}/{ref['name']}"))


def test_a_converged_claim_of_real_kinds_makes_no_write(stack: LocalStack, widgets: None) -> None:
    user = User(stack)
    ns = user.namespace("kinds")
    kinds_claim(user, ns, "c")
    claim = user.wait_ready(ns, "c")
    deployment = live(user, claim, KINDS.index("deployment"))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    # the server's defaults and normalisation are there, none of them in the template
    assert container["imagePullPolicy"] == "IfNotPresent" and container["resources"]["requests"]["cpu"] == "500m"
    assert live(user, claim, KINDS.index("service"))["spec"]["ports"][0]["protocol"] == "TCP"
    secret = live(user, claim, KINDS.index("secret"))
    assert "stringData" not in secret and secret["type"] == "Opaque"
    assert live(user, claim, KINDS.index("widget"))["spec"] == {"color": "blue", "size": "medium", "replicas": 1}

    # settled: the first runs' writes are over once a few seconds pass without one
    def quiet() -> bool:
        before = writes_in(user, ns)
        time.sleep(3)
        return writes_in(user, ns) == before

    wait_for(quiet, timeout=60, interval=0, message="the claim's writes settle")
    before = writes_in(user, ns)
    time.sleep(60)  # a measurement window, with a resync and many sweeps in it: the assertion is on what it saw
    after = writes_in(user, ns)
    assert after == before, {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key)}


def test_a_users_change_propagates_and_filters_still_refuse(stack: LocalStack, widgets: None) -> None:
    user = User(stack)
    ns = user.namespace("kinds-change")
    kinds_claim(user, ns, "c")
    claim = user.wait_ready(ns, "c")
    path = "/spec/resources/{}/template"
    user.json_patch_claim(ns, "c", [
        {"op": "replace", "path": path.format(KINDS.index("deployment")) + "/spec/replicas", "value": 3},
        {"op": "replace", "path": path.format(KINDS.index("service")) + "/spec/ports/0/port", "value": 8080},
        {"op": "replace", "path": path.format(KINDS.index("service")) + "/metadata/labels/tier", "value": "back"},
        {"op": "replace", "path": path.format(KINDS.index("secret")) + "/stringData/password", "value": "n3w"},
        {"op": "add", "path": path.format(KINDS.index("widget")) + "/spec/size", "value": "large"},
    ])
    wait_for(lambda: live(user, claim, KINDS.index("deployment"))["spec"]["replicas"] == 3, timeout=20,
             message="replicas propagated")
    wait_for(lambda: live(user, claim, KINDS.index("service"))["metadata"]["labels"]["tier"] == "back", timeout=20,
             message="the Service's label propagated")
    wait_for(lambda: live(user, claim, KINDS.index("widget"))["spec"]["size"] == "large", timeout=20,
             message="the Widget's size propagated")
    wait_for(lambda: live(user, claim, KINDS.index("secret"))["data"]["password"] == "bjN3", timeout=20,
             message="the Secret's stringData propagated into its data")
    assert live(user, claim, KINDS.index("service"))["spec"]["ports"][0]["port"] == 80  # the filter refuses it


def test_what_the_server_refuses_is_a_clear_error_without_a_hot_loop(stack: LocalStack, widgets: None) -> None:
    user = User(stack)
    ns = user.namespace("kinds-bad")
    user.provider(f"{ns}-any", {"override": {"metadata": {"namespace": ns}}, "healthCheck": "true",
                                "readinessCheck": "true"})
    container = {"name": "twin", "image": "registry.example/web:1"}
    bad = {
        # two containers of one name: a duplicate key of a list-map
        "duplicate": ({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [container, container]}}}},
            "ResourceRejected", 'Duplicate value: "twin"'),
        "unknown": ({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}, "colour": "blue"},
                    "ResourceRejected", 'unknown field "colour"'),
        "nokind": ({"apiVersion": "kinds.example.test/v9", "kind": "Gadget", "spec": {}}, "ApiMissing",
                   "kinds.example.test/v9"),
    }
    for name, (template, _, _) in bad.items():
        user.claim(ns, name, {"resources": [{"provider": {"name": f"{ns}-any"}, "template": template}]})
    for name, (_, reason, text) in bad.items():
        claim = user.wait_synced_error(ns, name, reason)
        assert text in condition(claim, "Synced")["message"], (name, condition(claim, "Synced"))
        user.wait_event(ns, name, reason)
    time.sleep(1)  # let the errors' own status writes and Events settle before measuring
    before = writes_in(user, ns)
    time.sleep(5)  # half the slow re-check (POOLBOY_PERMANENT_ERROR_RECHECK): at most one more try per claim
    after = writes_in(user, ns)
    tries = sum(after.values()) - sum(before.values())
    assert tries <= len(bad), {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key)}


def test_a_status_past_the_size_limit_is_an_error_not_a_loop(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("kinds-big")
    user.provider(f"{ns}-big", {"override": {"metadata": {"namespace": ns}}, "healthCheck": "true",
                                "readinessCheck": "true"})
    template = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": "hello"}}
    user.claim(ns, "c", {"resources": [{"provider": {"name": f"{ns}-big"}, "template": template}] * 2})
    claim = user.wait_ready(ns, "c")
    # someone else fills each ConfigMap: each fits the server's limit, both mirrored into one claim's status do not
    for index in range(2):
        user.core.patch_namespaced_config_map(reference(user, claim, index)["name"], ns,
                                              {"data": {"bulk": "x" * (900 * 1024)}})
    claim = user.wait_synced_error(ns, "c", "StatusTooLarge")
    assert "1500000 bytes" in condition(claim, "Synced")["message"]
    user.wait_event(ns, "c", "StatusTooLarge")
    assert status(claim)["resourceHandle"]["name"]  # still bound, and the rest of the status is there
    assert [r.get("reference", {}).get("kind") for r in status(claim)["resources"]] == ["ConfigMap", "ConfigMap"]
    assert all("state" not in resource for resource in status(claim)["resources"])
    time.sleep(1)
    before = writes_in(user, ns)
    time.sleep(5)
    assert writes_in(user, ns) == before

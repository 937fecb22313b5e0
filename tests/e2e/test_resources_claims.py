"""Resources-mode claims (``spec.resources[]`` with templates) and bad input, on the running stack, as a user sees them.

Each test is one user scenario from docs/behaviour.md (docs/behaviour.md#provider-selection, #claim-initialisation,
#resource-validation, #binding, #handle-creation, #propagation, #handles, #health, #watching-managed-resources and the
"errors" convention of docs/behaviour.md#conventions): manifests written the way an upstream Poolboy user writes them,
applied with the official client (and ``kubectl`` where the user would use it), checked only through what a user can
observe — status fields, conditions, Events and the managed resources. Every scenario has its own namespace and
providers, so the tests stay independent while sharing one module-scoped stack.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from typing import Any

import pytest
import redis
from kubernetes import client

from poolboy import keys
from stack.local import LocalStack
from tests.e2e import provider_support
from tests.e2e.provider_support import condition, status
from tests.waiting import wait_for
from workqueue.keyspace import DUE

D = "poolboy.gpte.redhat.com"
V1 = f"{D}/v1"
NS = "poolboy"

needs_kubectl = pytest.mark.kubectl


# --- a user with the official client -------------------------------------------------------------------------------


class User(provider_support.User):
    """The provider-mode scenarios' user, plus what these scenarios read: CRDs, JSON patches, Event summaries."""

    def __init__(self, stack: LocalStack) -> None:
        super().__init__(stack)
        self.extensions = client.ApiextensionsV1Api(self.custom.api_client)

    def json_patch_claim(self, namespace: str, name: str, ops: list[dict[str, Any]]) -> None:
        """A JSON patch (a list body is sent as ``application/json-patch+json``, like ``kubectl patch --type json``)."""
        self.custom.patch_namespaced_custom_object(D, "v1", namespace, "resourceclaims", name, ops,
                                                   _content_type="application/json-patch+json")

    def event_summaries(self, namespace: str, name: str) -> list[dict[str, Any]]:
        items = self.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
        return [{"reason": e.reason, "message": e.message, "type": e.type} for e in items]

    def wait_claim_for(self, namespace: str, name: str, predicate: Any, message: str, timeout: float = 20) -> dict:
        """``wait_claim`` with the message first, as these scenarios read best."""
        return self.wait_claim(namespace, name, predicate, timeout=timeout, message=message)

    def wait_synced_error(self, namespace: str, name: str, reason: str) -> dict[str, Any]:
        return self.wait_claim_for(namespace, name, lambda c: condition(c, "Synced").get("reason") == reason,
                                   f"Synced=False {reason}")

    def wait_ready(self, namespace: str, name: str) -> dict[str, Any]:
        return self.wait_claim_for(namespace, name, lambda c: condition(c, "Ready").get("status") == "True", "Ready")

    def wait_event(self, namespace: str, name: str, reason: str, type_: str = "Warning") -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            events = self.event_summaries(namespace, name)
            return next((e for e in events if e["reason"] == reason and e["type"] == type_), None)

        return wait_for(check, timeout=10, interval=0.1, message=f"{type_} Event {reason} on {namespace}/{name}")

    def api_counters(self) -> dict[str, Any]:
        assert self.stack.cluster is not None
        return self.stack.cluster.counters()

    def footprint(self, namespace: str, names: Iterable[str]) -> dict[str, Any]:
        """Each claim's resourceVersion, its handle's, and its Events': a write to the claim or its handle, or an
        Event about the claim created or patched, changes it."""
        result = {}
        for name in names:
            claim = self.get_claim(namespace, name) or {}
            handle = self.get_handle(status(claim)["resourceHandle"]["name"]) if status(claim).get(
                "resourceHandle") else None
            events = self.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
            result[name] = (claim["metadata"]["resourceVersion"], (handle or {}).get("metadata", {}).get(
                "resourceVersion"), sorted((e.metadata.name, e.metadata.resource_version) for e in events))
        return result

    def work_keys(self, namespace: str, names: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """Each claim's work key and its handle's (None while unbound)."""
        result = {}
        for name in names:
            handle = status(self.get_claim(namespace, name)).get("resourceHandle")
            result[name] = (keys.make(keys.CLAIM, namespace, name),
                            keys.make(keys.HANDLE, NS, handle["name"]) if handle else None)
        return result

    def rechecks(self, work: dict[str, tuple[str, str | None]]) -> dict[str, tuple[float | None, float | None]]:
        """When the slow re-checks of each claim and of its handle are due, from the delaying queue (None: none is
        scheduled, or it is being run)."""
        client = redis.Redis.from_url(self.stack.redis_url, decode_responses=True)
        try:
            return {name: (client.zscore(DUE, claim), client.zscore(DUE, handle) if handle else None)
                    for name, (claim, handle) in work.items()}
        finally:
            client.close()

    def requests_naming(self, namespace: str, names: Iterable[str]) -> dict[str, int]:
        """Requests the API server has served that name each claim (its reads and writes, of any subresource)."""
        counted = dict.fromkeys(names, 0)
        for item in self.api_counters()["objects"]:
            if item["namespace"] == namespace and item["name"] in counted and item["resource"].startswith(
                    "resourceclaims"):
                counted[item["name"]] += item["count"]
        return counted

    def assert_quiet_through_rechecks(self, namespace: str, names: list[str], timeout: float = 60) -> dict[str, int]:
        """Erroring claims, run again, write nothing (to the claim or its handle) and emit no Event. The window
        opens once each claim's first runs are over (they scheduled the slow re-check of the claim, or of its handle
        where the handle holds the error) and closes once every claim holding its own error has been re-checked
        (that re-check popped, run, and scheduled again later): it spans those re-runs and, being at least one
        re-check interval long, the periodic sweeps of claims and handles in between. Returns the requests that
        named each claim in the window."""
        work = self.work_keys(namespace, names)

        def scheduled() -> dict[str, float | None] | None:
            due = self.rechecks(work)
            return {name: own for name, (own, _) in due.items()} if all(any(d) for d in due.values()) else None

        try:
            first = wait_for(scheduled, timeout=timeout, message="every erroring claim's re-check scheduled")
        except AssertionError as error:
            raise AssertionError(f"{error}: {self.rechecks(work)}") from None
        own = {name: at for name, at in first.items() if at is not None}
        assert own, "no claim holds its own error: nothing shows the window long enough"
        before = self.footprint(namespace, names)
        requests = self.requests_naming(namespace, names)  # from here on only Poolboy reads the claims
        wait_for(lambda: all((due[0] or 0) > own[name] for name, due in self.rechecks(work).items() if name in own),
                 timeout=timeout, interval=0.5, message="every claim holding its own error re-checked")
        served = self.requests_naming(namespace, names)
        assert self.footprint(namespace, names) == before
        return {name: count - requests[name] for name, count in served.items()}


def kubectl(stack: LocalStack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), *args],
                          capture_output=True, text=True, timeout=60)


def provider_ref(name: str) -> dict[str, str]:
    return {"apiVersion": V1, "kind": "ResourceProvider", "name": name, "namespace": NS}


def reference(user: User, claim: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """The managed resource's reference once the handle recorded it (and the claim mirrored it)."""
    handle_name = status(claim)["resourceHandle"]["name"]

    def recorded() -> dict[str, Any] | None:
        resources = status(user.get_handle(handle_name)).get("resources") or []
        return (resources[index] if len(resources) > index else {}).get("reference")

    return wait_for(recorded, timeout=15, interval=0.1, message="resource reference recorded")


def config_map_provider(namespace: str, **spec: Any) -> dict[str, Any]:
    """A provider of ConfigMaps in ``namespace``: the claim template gives the rest (resources mode)."""
    return {"override": {"metadata": {"namespace": namespace}}, "healthCheck": "true", "readinessCheck": "true",
            **spec}


# --- docs/behaviour.md#provider-selection, #claim-initialisation, #handle-creation, #handles: a resources-mode claim
# end to end -----------------------------------------------------


@needs_kubectl
def test_resources_claim_is_initialised_from_defaults_and_gets_its_own_handle(stack: LocalStack) -> None:
    """Explicit provider and template-matched provider in one claim; defaults from ``default`` (rendered) and the
    schema; the handle (guid name, finalizer, labels, minimum lifespan); managed resource names and annotations;
    ``kubectl wait``, ``kubectl get`` columns and ``kubectl describe`` Events."""
    user = User(stack)
    ns = user.namespace("rs-init")
    user.provider(f"{ns}-explicit", config_map_provider(
        ns, template={"enable": True},
        default={"data": {"owner": "{{ resource_claim.metadata.name }}", "color": "blue"}},
        validation={"openAPIV3Schema": {"type": "object", "properties": {
            "data": {"type": "object", "properties": {"size": {"type": "string", "default": "small"}}}}}},
        lifespan={"default": "1d", "maximum": "7d"}))
    user.provider(f"{ns}-matched", config_map_provider(
        ns, match={"kind": "ConfigMap", "metadata": {"labels": {"matched-by": ns}}},
        override={"metadata": {"namespace": ns, "generateName": "app-"}},
        lifespan={"default": "2h", "maximum": "3d", "relativeMaximum": "5d"}))
    user.claim(ns, "c", {"resources": [
        {"name": "first", "provider": {"name": f"{ns}-explicit"},
         "template": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"color": "red"}}},
        {"name": "second", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"labels": {"matched-by": ns}}}},
    ]})

    waited = kubectl(stack, "wait", "--for=condition=Ready", "--timeout=30s", "-n", ns, "rclaim/c")
    assert waited.returncode == 0, waited.stderr
    claim = user.get_claim(ns, "c")

    assert f"{D}/resource-claim-init-timestamp" in claim["metadata"]["annotations"]
    first, second = claim["spec"]["resources"]
    assert first["provider"] == provider_ref(f"{ns}-explicit")
    assert second["provider"] == provider_ref(f"{ns}-matched")
    # filled, never overwritten: the claim's colour stays; the rendered default and the schema default are added
    assert first["template"]["data"] == {"color": "red", "owner": "c", "size": "small"}
    assert [r["provider"]["name"] for r in status(claim)["resources"]] == [f"{ns}-explicit", f"{ns}-matched"]

    handle_name = status(claim)["resourceHandle"]["name"]
    handle = user.get_handle(handle_name)
    assert handle is not None
    assert handle_name.startswith("guid-") and len(handle_name) == len("guid-") + 5
    assert handle["metadata"]["finalizers"] == [D]
    assert handle["metadata"]["labels"][f"{D}/resource-claim-name"] == "c"
    assert handle["metadata"]["labels"][f"{D}/resource-claim-namespace"] == ns
    assert handle["spec"]["resourceClaim"] == {"apiVersion": V1, "kind": "ResourceClaim", "name": "c",
                                               "namespace": ns}
    lifespan = handle["spec"]["lifespan"]
    assert (lifespan["default"], lifespan["maximum"], lifespan["relativeMaximum"]) == ("2h", "3d", "5d")
    assert [r.get("name") for r in handle["spec"]["resources"]] == ["first", "second"]

    guid = handle_name[len("guid-"):]
    refs = [reference(user, claim, 0), reference(user, claim, 1)]
    assert [r["name"] for r in refs] == [f"guid0-{guid}", f"app-{guid}"]
    cm = user.config_map(ns, f"app-{guid}")
    assert cm is not None
    annotations = cm["metadata"]["annotations"]
    assert annotations[f"{D}/resource-handle-name"] == handle_name
    assert annotations[f"{D}/resource-handle-uid"] == handle["metadata"]["uid"]
    assert annotations[f"{D}/resource-index"] == "1"
    assert annotations[f"{D}/resource-provider-name"] == f"{ns}-matched"
    assert annotations[f"{D}/resource-claim-name"] == "c"
    user.wait_claim_for(ns, "c", lambda c: (status(c)["resources"][0].get("state") or {}).get("data", {}).get("owner")
                    == "c", "state of the first resource mirrored")

    table = kubectl(stack, "get", "rclaim", "-n", ns)
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "HANDLE", "PROVIDER", "HEALTHY", "READY", "SYNCED", "AGE", "MESSAGE"]
    assert row.split()[:5] == ["c", handle_name, "True", "True", "Synced"]  # no spec.provider in resources mode
    described = kubectl(stack, "describe", "rclaim", "-n", ns, "c")
    assert "HandleCreated" in described.stdout and f"Created ResourceHandle {handle_name}" in described.stdout

    # docs/behaviour.md#handles: recreate under the same name
    user.core.delete_namespaced_config_map(f"guid0-{guid}", ns)
    wait_for(lambda: user.config_map(ns, f"guid0-{guid}"), timeout=15, interval=0.1, message="resource recreated")


# --- docs/behaviour.md#provider-selection matching against every provider; zero and ambiguous matches
# ------------------------------------------------


def test_zero_and_ambiguous_provider_matches_report_and_recover(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rs-match")
    template = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"tier": ns}}}
    user.claim(ns, "none", {"resources": [{"template": template}]})
    claim = user.wait_synced_error(ns, "none", "NoProviderMatch")
    assert condition(claim, "Synced")["message"] == "spec.resources[0]: no ResourceProvider matches the template."
    user.wait_event(ns, "none", "NoProviderMatch")

    # a provider that matches appears: the claim is re-checked at once, not at its slow re-check
    user.provider(f"{ns}-a", config_map_provider(ns, match={"metadata": {"labels": {"tier": ns}}}))
    user.wait_ready(ns, "none")

    user.provider(f"{ns}-b", config_map_provider(ns, match={"kind": "ConfigMap", "metadata": {"labels": {"tier": ns}}}))
    user.claim(ns, "two", {"resources": [{"template": template}]})
    claim = user.wait_synced_error(ns, "two", "AmbiguousProviderMatch")
    assert condition(claim, "Synced")["message"] == (
        f"spec.resources[0]: more than one ResourceProvider matches ({ns}-a, {ns}-b) the template.")
    user.wait_event(ns, "two", "AmbiguousProviderMatch")
    assert "resourceHandle" not in status(claim)

    user.json_patch_claim(ns, "two", [{"op": "add", "path": "/spec/resources/0/provider",
                                       "value": {"name": f"{ns}-b"}}])
    claim = user.wait_ready(ns, "two")
    assert condition(claim, "Synced")["status"] == "True"
    assert status(claim)["resources"][0]["provider"]["name"] == f"{ns}-b"


# --- docs/behaviour.md#resource-validation validation
# ------------------------------------------------------------------------------------------------


def test_validation_errors_are_exact_block_updates_and_clear_when_fixed(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rs-valid")
    user.provider(f"{ns}-p", config_map_provider(
        ns,
        updateFilters=[{"pathMatch": "/data/.*", "allowedOps": ["add", "replace"]}],
        validation={
            "openAPIV3Schema": {"type": "object", "properties": {
                "data": {"type": "object", "additionalProperties": False, "properties": {
                    "color": {"type": "string", "enum": ["blue", "red"]},
                    "size": {"type": "string"}, "count": {"type": "string"}}}}},
            "checks": [{"name": "not-red-and-large", "check": "not (data.color == 'red' and data.size == 'large')"},
                       {"name": "count-is-a-number", "check": "data.count is not defined or data.count | int > 0"},
                       {"name": "explodes", "check": "data.size != 'boom' or (1 / 0)"}]}))
    user.claim(ns, "c", {"resources": [{"provider": {"name": f"{ns}-p"}, "template": {
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"color": "blue", "size": "small"}}}]})
    claim = user.wait_ready(ns, "c")
    cm_name = reference(user, claim)["name"]
    path = "/spec/resources/0/template/data"

    cases = [
        ([{"op": "replace", "path": f"{path}/color", "value": "purple"}],
         "data.color: 'purple' is not one of ['blue', 'red']"),
        ([{"op": "replace", "path": f"{path}/color", "value": "blue"},
          {"op": "add", "path": f"{path}/bogus", "value": "x"}],
         "data: Additional properties are not allowed ('bogus' was unexpected)"),
        ([{"op": "remove", "path": f"{path}/bogus"}, {"op": "replace", "path": f"{path}/color", "value": "red"},
          {"op": "replace", "path": f"{path}/size", "value": "large"}],
         "Validation check failed: not-red-and-large"),
        ([{"op": "replace", "path": f"{path}/size", "value": "boom"}],
         'Validation check "explodes" failed with exception: division by zero'),
    ]
    for ops, expected in cases:
        user.json_patch_claim(ns, "c", ops)
        claim = user.wait_claim_for(ns, "c",
                                    lambda c, e=expected: status(c)["resources"][0].get("validationError") == e,
                                    f"validationError {expected!r}")
        synced = condition(claim, "Synced")
        assert (synced["status"], synced["reason"]) == ("False", "ValidationFailed")
        assert synced["message"] == f"spec.resources[0]: {expected}"
        wait_for(lambda e=expected: any(ev["message"] == f"spec.resources[0]: {e}" and ev["type"] == "Warning"
                                        for ev in user.event_summaries(ns, "c")),
                 timeout=10, message=f"Event for {expected}")
    # no handle update while invalid: the live resource still has the last accepted values
    assert (user.config_map(ns, cm_name) or {})["data"] == {"color": "blue", "size": "small"}

    user.json_patch_claim(ns, "c", [{"op": "replace", "path": f"{path}/size", "value": "medium"}])
    claim = user.wait_claim_for(ns, "c", lambda c: "validationError" not in status(c)["resources"][0]
                            and condition(c, "Synced").get("status") == "True", "validation error cleared")
    wait_for(lambda: (user.config_map(ns, cm_name) or {}).get("data") == {"color": "red", "size": "medium"},
             timeout=15, interval=0.1, message="fixed template reaches the live resource")


# --- docs/behaviour.md#propagation propagation through updateFilters; docs/behaviour.md#health /
# docs/behaviour.md#watching-managed-resources status-only changes -------------------------------------


def test_template_changes_reach_the_resource_only_where_update_filters_allow(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rs-prop")
    user.provider(f"{ns}-p", config_map_provider(
        ns, updateFilters=[{"pathMatch": "/data/.*", "allowedOps": ["add", "replace"]}],
        readinessCheck="data.ready | default('no') == 'yes'",
        statusSummaryTemplate={"phase": "{{ resources[-1].state.data.phase | default('unknown') }}"}))
    user.claim(ns, "c", {"resources": [{"provider": {"name": f"{ns}-p"}, "template": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a": "1"}}, "data": {"x": "1"}}}]})
    claim = user.wait_claim_for(ns, "c", lambda c: condition(c, "Bound").get("status") == "True", "bound")
    cm_name = reference(user, claim)["name"]
    handle_name = status(claim)["resourceHandle"]["name"]
    assert condition(user.wait_claim_for(ns, "c", lambda c: condition(c, "Ready"), "Ready condition"),
                     "Ready")["status"] == "False"

    user.json_patch_claim(ns, "c", [{"op": "replace", "path": "/spec/resources/0/template/data/x", "value": "2"},
                               {"op": "add", "path": "/spec/resources/0/template/metadata/labels/b", "value": "2"}])
    wait_for(lambda: (user.config_map(ns, cm_name) or {}).get("data", {}).get("x") == "2", timeout=15, interval=0.1,
             message="allowed data change reaches the ConfigMap")
    handle = user.get_handle(handle_name) or {}
    assert handle["spec"]["resources"][0]["template"]["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert (user.config_map(ns, cm_name) or {})["metadata"]["labels"] == {"a": "1"}  # no filter allows labels

    # someone else changes the live resource (data only): readiness, state and summary follow promptly
    user.core.patch_namespaced_config_map(cm_name, ns, {"data": {"ready": "yes", "phase": "running"}})
    claim = user.wait_claim_for(ns, "c", lambda c: status(c).get("ready") is True
                            and status(c).get("summary") == {"phase": "running"}, "ready and summary", timeout=10)
    assert status(claim)["resources"][0]["state"]["data"]["ready"] == "yes"
    assert condition(claim, "Ready")["status"] == "True"


# --- docs/behaviour.md#handles: reference stickiness
# ------------------------------------------------------------------------------------


def test_changing_the_kind_of_a_created_resource_is_refused(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rs-sticky")
    user.provider(f"{ns}-p", config_map_provider(ns))
    user.claim(ns, "c", {"resources": [{"provider": {"name": f"{ns}-p"},
                                        "template": {"apiVersion": "v1", "kind": "ConfigMap"}}]})
    claim = user.wait_ready(ns, "c")
    cm_name = reference(user, claim)["name"]
    user.json_patch_claim(ns, "c", [{"op": "replace", "path": "/spec/resources/0/template/kind", "value": "Secret"}])
    claim = user.wait_claim_for(ns, "c", lambda c: "would change from" in condition(c, "Synced").get("message", ""),
                            "reference change refused on the claim")
    assert condition(claim, "Synced")["status"] == "False"
    user.wait_event(ns, "c", condition(claim, "Synced")["reason"])
    assert user.config_map(ns, cm_name) is not None

    user.json_patch_claim(ns, "c", [{"op": "replace", "path": "/spec/resources/0/template/kind", "value": "ConfigMap"}])
    user.wait_claim_for(ns, "c", lambda c: condition(c, "Synced").get("status") == "True", "Synced again")


# --- docs/behaviour.md#handles: a missing API, then the custom kind is created at runtime
# -------------------------------------------------


def test_missing_api_is_reported_then_a_crd_created_at_runtime_is_used(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rs-crd")
    group = f"{ns}.example.com"
    user.provider(f"{ns}-p", {
        "override": {"apiVersion": f"{group}/v1alpha1", "kind": "Gadget", "metadata": {"namespace": ns}},
        "healthCheck": "status.phase | default('') != 'Failed'",
        "readinessCheck": "status.phase | default('') == 'Running'"})
    user.claim(ns, "c", {"resources": [{"provider": {"name": f"{ns}-p"}, "template": {"spec": {"size": 1}}}]})
    claim = user.wait_synced_error(ns, "c", "ApiMissing")
    message = condition(claim, "Synced")["message"]
    assert f"{group}/v1alpha1" in message and "Gadget" in message
    event = user.wait_event(ns, "c", "ApiMissing")
    assert event["message"] == message

    stack.grant({"apiGroups": [group], "resources": ["gadgets"]})  # the administrator lets Poolboy manage them
    user.extensions.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
                 "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]}})
    claim = user.wait_claim_for(ns, "c", lambda c: condition(c, "Synced").get("status") == "True"
                            and (status(c)["resources"][0].get("state") or {}).get("spec") == {"size": 1},
                            "Gadget created once its CRD exists", timeout=30)
    assert condition(claim, "Ready")["status"] == "False"
    name = reference(user, claim)["name"]

    # a status-only change of the custom resource makes the claim ready promptly (watched kind,
    # docs/behaviour.md#watching-managed-resources)
    user.custom.patch_namespaced_custom_object_status(group, "v1alpha1", ns, "gadgets", name,
                                                      {"status": {"phase": "Running"}})
    claim = user.wait_claim_for(ns, "c", lambda c: status(c).get("ready") is True, "ready after status change",
                                timeout=5)
    assert status(claim)["resources"][0]["state"]["status"] == {"phase": "Running"}
    assert status(claim)["healthy"] is True


# --- docs/behaviour.md#binding binding pool handles in resources mode
# ------------------------------------------------------------------


def test_pool_handles_bind_by_template_with_match_ignore_and_the_expiry_filter(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rs-pool")
    provider = f"{ns}-p"
    user.provider(provider, config_map_provider(
        ns, matchIgnore=["/data/note"], updateFilters=[{"pathMatch": "/data/.*"}]))
    pool_template = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"size": "s"}}
    user.pool(f"{ns}-long", {"minAvailable": 1, "lifespan": {"unclaimed": "1h", "default": "2h"},
                             "resources": [{"provider": provider_ref(provider), "template": pool_template}]})

    def unbound(pool: str) -> list[dict[str, Any]]:
        return [h for h in user.handles(f"{D}/resource-pool-name={pool}") if not h["spec"].get("resourceClaim")]

    wait_for(lambda: unbound(f"{ns}-long"), timeout=15, interval=0.1, message="pool handle")
    pool_handle = unbound(f"{ns}-long")[0]["metadata"]["name"]

    # a different, ignored field still matches; the claim's value reaches the handle and the resource
    user.claim(ns, "ignored-diff", {"resources": [{"name": "main", "provider": {"name": provider}, "template": {
        **pool_template, "data": {"size": "s", "note": "hello"}}}]})
    claim = user.wait_ready(ns, "ignored-diff")
    assert status(claim)["resourceHandle"]["name"] == pool_handle
    bound = user.get_handle(pool_handle) or {}
    assert bound["spec"]["resources"][0]["name"] == "main"
    assert bound["spec"]["resources"][0]["template"]["data"] == {"size": "s", "note": "hello"}
    assert "provider" not in bound["spec"]
    cm_name = reference(user, claim)["name"]
    wait_for(lambda: (user.config_map(ns, cm_name) or {}).get("data") == {"size": "s", "note": "hello"},
             timeout=15, interval=0.1, message="claim template applied to the pool resource")
    user.wait_event(ns, "ignored-diff", "Bound", "Normal")
    wait_for(lambda: unbound(f"{ns}-long"), timeout=15, interval=0.1, message="pool replenished")

    # a difference that is not ignored does not match: a new handle is created
    user.claim(ns, "real-diff", {"resources": [{"provider": {"name": provider}, "template": {
        **pool_template, "data": {"size": "xl"}}}]})
    claim = user.wait_ready(ns, "real-diff")
    created = user.get_handle(status(claim)["resourceHandle"]["name"]) or {}
    assert "resourcePool" not in created["spec"]

    # a pool handle that expires within 120 s is never bound
    user.pool(f"{ns}-short", {"minAvailable": 1, "lifespan": {"unclaimed": "100s"},
                              "resources": [{"provider": provider_ref(provider),
                                             "template": {**pool_template, "data": {"size": "short"}}}]})
    wait_for(lambda: unbound(f"{ns}-short"), timeout=15, interval=0.1, message="short-lived pool handle")
    short_handle = unbound(f"{ns}-short")[0]["metadata"]["name"]
    user.claim(ns, "short", {"resources": [{"provider": {"name": provider}, "template": {
        **pool_template, "data": {"size": "short"}}}]})
    claim = user.wait_ready(ns, "short")
    assert status(claim)["resourceHandle"]["name"] != short_handle
    assert not (user.get_handle(short_handle) or {}).get("spec", {}).get("resourceClaim")


# --- bad input of every kind ---------------------------------------------------------------------------------------


def test_bad_input_ends_as_condition_and_event_without_a_hot_loop_and_recovers(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rs-bad")
    cm = {"apiVersion": "v1", "kind": "ConfigMap"}
    user.provider(f"{ns}-good", config_map_provider(ns))
    user.provider(f"{ns}-tpl", config_map_provider(ns, template={"enable": True},
                                                    override={"metadata": {"namespace": ns},
                                                              "data": {"x": "{{ undefined_thing }}"}}))
    user.provider(f"{ns}-life", config_map_provider(ns, lifespan={"default": "forever"}))
    user.provider(f"{ns}-nokind", config_map_provider(ns))
    bad = {
        "both": ({"provider": {"name": f"{ns}-good"}, "resources": [{"provider": {"name": f"{ns}-good"},
                                                                     "template": cm}]}, "InvalidSpec",
                 "Exactly one of spec.provider and spec.resources must be given."),
        "neither": ({}, "InvalidSpec", "Exactly one of spec.provider and spec.resources must be given."),
        "unknown": ({"resources": [{"provider": {"name": f"{ns}-missing"}, "template": cm}]}, "ProviderNotFound",
                    f"ResourceProvider {ns}-missing not found"),
        "template": ({"resources": [{"provider": {"name": f"{ns}-tpl"}, "template": cm}]}, "TemplateError",
                     "'undefined_thing' is undefined"),
        # the provider's own mistake: the claim says the provider is broken, naming it and the field
        "lifespan": ({"resources": [{"provider": {"name": f"{ns}-life"}, "template": cm}]}, "ProviderInvalid",
                     f"ResourceProvider {ns}-life is invalid: spec.lifespan.default: invalid interval 'forever'"),
        "nokind": ({"resources": [{"provider": {"name": f"{ns}-nokind"}, "template": {"data": {"a": "b"}}}]},
                   "InvalidDefinition", "no apiVersion or kind"),
    }
    for name, (spec, _, _) in bad.items():
        user.claim(ns, name, spec)
    user.claim(ns, "good", {"resources": [{"provider": {"name": f"{ns}-good"}, "template": cm}]})

    for name, (_, reason, text) in bad.items():
        claim = user.wait_synced_error(ns, name, reason)
        assert text in condition(claim, "Synced")["message"], (name, condition(claim, "Synced"))
        user.wait_event(ns, name, reason)
    for name in ("both", "neither", "unknown", "lifespan"):
        assert "resourceHandle" not in status(user.get_claim(ns, name)), name
    user.wait_ready(ns, "good")  # other claims are not affected

    # no hot loop: run again, the erroring claims make no write, emit no Event, and are read only a few times
    requests = user.assert_quiet_through_rechecks(ns, list(bad))
    assert all(count <= 4 for count in requests.values()), requests  # runs read the shared cache, not the API

    # the user fixes each claim (or the administrator the provider): each recovers promptly
    user.json_patch_claim(ns, "unknown", [{"op": "replace", "path": "/spec/resources/0/provider/name",
                                      "value": f"{ns}-good"}])
    user.json_patch_claim(ns, "nokind", [{"op": "add", "path": "/spec/resources/0/template/apiVersion", "value": "v1"},
                                    {"op": "add", "path": "/spec/resources/0/template/kind", "value": "ConfigMap"}])
    user.json_patch_claim(ns, "neither", [{"op": "add", "path": "/spec/resources",
                                      "value": [{"provider": {"name": f"{ns}-good"}, "template": cm}]}])
    user.json_patch_claim(ns, "both", [{"op": "remove", "path": "/spec/provider"}])
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourceproviders", f"{ns}-tpl", {
        "spec": {"override": {"data": {"x": "{{ undefined_thing | default('fixed') }}"}}}})
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourceproviders", f"{ns}-life", {
        "spec": {"lifespan": {"default": "1d"}}})
    for name in bad:
        claim = user.wait_ready(ns, name)
        assert condition(claim, "Synced")["status"] == "True", name

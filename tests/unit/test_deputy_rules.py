"""The pure rules that keep Poolboy within what a provider grants (docs/security.md#6-poolboy-acts-only-on-what-it-made,
#7-secret-values-never-leak): whose object is whose, where a claim's template may go, what of a state is shown, and
what the read cache keeps."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cache import model as cache_model
from poolboy import kube
from poolboy.context import Context
from poolboy.domain import claim_status, ownership, provider_validation, redaction, resource_targets
from poolboy.domain.resource_targets import TargetPolicy
from poolboy.kube.no_cluster import NoCluster
from poolboy.reconcilers.handle import lifecycle
from poolboy.settings import Settings

D = "poolboy.gpte.redhat.com"
HANDLE = {"metadata": {"name": "guid-abcde", "namespace": "poolboy", "uid": "u-1"}, "spec": {"resources": []}}


def config_map(annotations: dict[str, str] | None = None, name: str = "cm", namespace: str = "ns") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}}}


# --- ownership -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("annotations", "managed"), [
    ({f"{D}/resource-handle-uid": "u-1"}, True),
    ({f"{D}/resource-handle-name": "guid-abcde", f"{D}/resource-handle-namespace": "poolboy"}, True),
    ({f"{D}/resource-handle-name": "guid-abcde", f"{D}/resource-handle-namespace": "poolboy",
      f"{D}/resource-handle-uid": "u-old"}, True),  # restored from a backup: the handle's name is its own
    ({}, False),
    ({f"{D}/resource-handle-uid": "u-2"}, False),
    ({f"{D}/resource-handle-name": "guid-other", f"{D}/resource-handle-namespace": "poolboy"}, False),
    ({f"{D}/resource-handle-name": "guid-abcde", f"{D}/resource-handle-namespace": "elsewhere"}, False),
    ({"other.example/resource-handle-uid": "u-1"}, False),
])
def test_a_handle_manages_only_objects_with_its_mark(annotations: dict[str, str], managed: bool) -> None:
    assert ownership.may_manage(D, HANDLE, config_map(annotations)) is managed


def test_an_administrators_reference_in_the_handle_spec_lets_it_manage_that_object_only() -> None:
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "ns"}
    handle = {**HANDLE, "spec": {"resources": [{"provider": {"name": "p"}, "reference": reference}]}}
    assert ownership.may_manage(D, handle, config_map())
    assert not ownership.may_manage(D, handle, config_map(name="cm2"))
    assert not ownership.may_manage(D, handle, config_map(namespace="ns2"))


def test_the_conflict_message_names_the_object_and_its_owner() -> None:
    message = ownership.conflict_message(HANDLE, config_map({f"{D}/resource-handle-name": "guid-zzzzz"}))
    assert "ConfigMap cm in namespace ns" in message and "ResourceHandle guid-zzzzz" in message
    assert "not made by Poolboy" in ownership.conflict_message(HANDLE, config_map())


# --- where a claim's template may go ---------------------------------------------------------------------------------


def refusal(template: dict[str, Any], policy: TargetPolicy = TargetPolicy(), *, override: dict[str, Any] | None = None,
            default: dict[str, Any] | None = None, namespaced: bool | None = True,
            labels: dict[str, dict[str, str]] | None = None) -> str | None:
    return resource_targets.refusal(template, claim_namespace="mine", provider_name="p", policy=policy,
                                    override=override, default=default, namespaced=namespaced,
                                    labels_of=(labels or {}).get)


def ns(namespace: str | None, kind: str = "ConfigMap") -> dict[str, Any]:
    metadata = {"namespace": namespace} if namespace else {}
    return {"apiVersion": "v1", "kind": kind, "metadata": metadata}


def test_a_claims_template_stays_in_the_claims_namespace_unless_the_provider_names_another() -> None:
    assert refusal(ns("mine")) is None
    assert refusal(ns(None)) is None, "no namespace asked for: the claim chose nothing"
    message = refusal(ns("kube-system"))
    assert message is not None and "kube-system" in message and "the claim's namespace mine" in message


@pytest.mark.parametrize("grant", [
    {"override": {"metadata": {"namespace": "{{ anything }}"}}},  # pinned: the user's value never survives
    {"default": {"metadata": {"namespace": "kube-system"}}},  # the provider's own default
    {"policy": TargetPolicy(namespaces=("kube-system",))},
    {"policy": TargetPolicy(any_namespace=True)},
    {"policy": TargetPolicy(namespace_selector={"matchLabels": {"team": "a"}}),
     "labels": {"kube-system": {"team": "a"}}},
])
def test_a_namespace_the_provider_names_is_allowed(grant: dict[str, Any]) -> None:
    assert refusal(ns("kube-system"), **grant) is None


def test_a_selector_that_does_not_match_refuses() -> None:
    policy = TargetPolicy(namespace_selector={"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]})
    assert refusal(ns("kube-system"), policy, labels={"kube-system": {"team": "b"}}) is not None
    assert refusal(ns("gone"), policy) is not None, "a namespace that does not exist matches no selector"


def test_a_cluster_scoped_kind_needs_the_providers_word() -> None:
    template = ns(None, kind="ClusterRoleBinding")
    message = refusal(template, namespaced=False)
    assert message is not None and "cluster-scoped" in message
    assert refusal(template, TargetPolicy(cluster_scoped=True), namespaced=False) is None
    assert refusal(template, override={"kind": "ClusterRoleBinding"}, namespaced=False) is None
    assert refusal(template, default={"kind": "ClusterRoleBinding"}, namespaced=False) is None


@pytest.mark.parametrize(("operator", "labels", "matches"), [
    ("In", {"k": "a"}, True), ("In", {"k": "z"}, False), ("In", {}, False),
    ("NotIn", {"k": "z"}, True), ("NotIn", {"k": "a"}, False), ("NotIn", {}, True),
    ("Exists", {"k": "z"}, True), ("Exists", {}, False),
    ("DoesNotExist", {}, True), ("DoesNotExist", {"k": "a"}, False),
])
def test_label_selector_expressions(operator: str, labels: dict[str, str], matches: bool) -> None:
    selector = {"matchExpressions": [{"key": "k", "operator": operator, "values": ["a"]}]}
    assert resource_targets.selector_matches(selector, labels) is matches


def test_a_provider_with_an_unknown_selector_operator_says_so_itself() -> None:
    spec = {"allowedTargets": {"namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "Gt"}]}}}
    assert [path for path, _ in provider_validation.problems(spec)] == ["spec.allowedTargets.namespaceSelector"]
    assert provider_validation.problems({"statusRedactions": [{"pathMatch": "(["}]})


# --- what a state shows ----------------------------------------------------------------------------------------------


def secret() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "s", "namespace": "ns", "managedFields": [{"manager": "x"}], "annotations": {
                redaction.LAST_APPLIED: '{"stringData": {"password": "hunter2"}}', "keep": "me"}},
            "data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="}, "stringData": {"token": "t0ken"}}


def test_a_secrets_values_never_reach_a_claims_status_but_its_keys_do() -> None:
    state = claim_status.prune_state(secret(), D)
    assert state["data"] == {"password": redaction.REDACTED, "user": redaction.REDACTED}
    assert state["stringData"] == {"token": redaction.REDACTED}
    assert state["metadata"]["annotations"] == {"keep": "me"}
    text = orjson.dumps(state).decode()
    assert "aHVudGVyMg" not in text and "hunter2" not in text and "t0ken" not in text


def test_a_providers_status_redactions_hide_further_fields() -> None:
    resource = {"apiVersion": "example.test/v1", "kind": "Db",
                "metadata": {"name": "d"}, "spec": {"users": [{"name": "a", "password": "p1"}]},
                "status": {"token": "t", "phase": "Ready"}}
    state = claim_status.prune_state(resource, D, redaction.patterns_of([{"pathMatch": "/spec/users/[0-9]+/password"},
                                                                          {"pathMatch": "/status/token"}]))
    assert state["spec"]["users"] == [{"name": "a", "password": redaction.REDACTED}]
    assert state["status"] == {"token": redaction.REDACTED, "phase": "Ready"}


# --- what the read cache keeps ---------------------------------------------------------------------------------------


def test_the_read_cache_keeps_no_secret_values_and_reads_a_secret_as_a_miss() -> None:
    stored = cache_model.stored_form(secret())
    text = orjson.dumps(stored).decode()
    assert "aHVudGVyMg" not in text and "hunter2" not in text and "t0ken" not in text
    assert stored["metadata"]["name"] == "s", "its identity stays, so versions still order and deletes still prune"
    assert cache_model.decode(orjson.dumps(stored)) is None


def test_the_read_cache_drops_managed_fields_and_the_last_applied_annotation() -> None:
    obj = config_map({redaction.LAST_APPLIED: "{...}", "keep": "me"})
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    obj["data"] = {"a": "b"}
    stored = cache_model.stored_form(obj)
    assert stored["metadata"]["annotations"] == {"keep": "me"} and "managedFields" not in stored["metadata"]
    assert stored["data"] == {"a": "b"} and cache_model.decode(orjson.dumps(stored)) == stored
    plain = config_map()
    assert cache_model.stored_form(plain) is plain, "nothing to drop: no copy"


# --- deleting a managed resource -------------------------------------------------------------------------------------


class ReplacedBetweenReadAndDelete:
    """Serves the object the handle made; by the time the writes arrive, someone has recreated the name (the API
    server's uid preconditions fail). Records every write (a pure unit test: no API server needed)."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.writes: list[tuple[str, Any]] = []

    def get_or_none(self, *args: Any) -> dict[str, Any]:
        return self.obj

    def patch_json(self, api_version: str, kind: str, name: str, namespace: str | None, ops: list[dict[str, Any]],
                   **_: Any) -> dict[str, Any]:
        self.writes.append(("patch", ops[0]))
        raise kube.Invalid(422, "Invalid", "the test operation failed")

    def delete_if_exists(self, api_version: str, kind: str, name: str, namespace: str | None = None,
                         **preconditions: Any) -> bool:
        self.writes.append(("delete", preconditions.get("uid")))
        raise kube.Conflict(409, "Conflict", "Precondition failed: UID in precondition: u-mine")


def test_every_write_of_a_delete_carries_the_uid_it_read_and_a_replaced_object_survives() -> None:
    mine = {**config_map({f"{D}/resource-handle-uid": "u-1"}), "metadata": {
        "name": "cm", "namespace": "ns", "uid": "u-mine", "annotations": {f"{D}/resource-handle-uid": "u-1"}}}
    fake = ReplacedBetweenReadAndDelete(mine)
    ctx = Context(kube=fake, events=fake, mapper=NoCluster("no discovery"),  # type: ignore[arg-type]
                  settings=Settings(operator_namespace="poolboy"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "ns"}
    assert lifecycle._delete_resource(ctx, HANDLE, ref) is False
    assert fake.writes == [("patch", {"op": "test", "path": "/metadata/uid", "value": "u-mine"}),
                           ("delete", "u-mine")]


def test_an_unmarked_object_is_not_even_annotated_before_a_delete() -> None:
    fake = ReplacedBetweenReadAndDelete({**config_map(), "metadata": {"name": "cm", "namespace": "ns", "uid": "x"}})
    ctx = Context(kube=fake, events=fake, mapper=NoCluster("no discovery"),  # type: ignore[arg-type]
                  settings=Settings(operator_namespace="poolboy"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "ns"}
    assert lifecycle._delete_resource(ctx, HANDLE, ref) is False and fake.writes == []

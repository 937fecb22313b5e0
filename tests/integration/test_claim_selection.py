"""Claim reconcile: ignore label, finalizer, provider selection (docs/behaviour.md#provider-selection), initialisation
(docs/behaviour.md#claim-initialisation), start (docs/behaviour.md#lifespans),
deletion (docs/behaviour.md#deletion)."""

from __future__ import annotations

import json
from datetime import timedelta

from poolboy.result import PermanentError, Result
from tests.integration.claim_support import ClaimEnv, env_fixture, ts  # noqa: F401 - env_fixture provides "env"


def test_ignored_claim_gets_no_finalizer_and_no_status(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"provider": {"name": "p"}}, labels={f"{env.d}/ignore": ""})
    env.converge("c")
    claim = env.get_claim("c")
    assert not claim["metadata"].get("finalizers")
    assert "status" not in claim or not claim["status"]
    assert env.handles() == []


def test_claim_gets_exactly_the_domain_finalizer(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    assert env.get_claim("c")["metadata"]["finalizers"] == [env.d]


def test_claim_with_both_provider_and_resources_is_a_permanent_error(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"provider": {"name": "p"}, "resources": [{"provider": {"name": "p"}}]})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError) and outcome.reason == "InvalidSpec"
    assert env.condition("c", "Synced")["status"] == "False"
    assert env.condition("c", "Synced")["reason"] == "InvalidSpec"
    assert env.handles() == []
    assert any(e["reason"] == "InvalidSpec" and e["type"] == "Warning" for e in env.events("c"))


def test_claim_with_neither_provider_nor_resources_is_a_permanent_error(env: ClaimEnv) -> None:
    env.claim("c", {})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError) and outcome.reason == "InvalidSpec"
    assert env.handles() == []


def test_permanent_error_event_is_emitted_once_not_per_reconcile(env: ClaimEnv) -> None:
    env.claim("c", {})
    env.converge("c")
    env.converge("c")
    assert [e["count"] for e in env.events("c") if e["reason"] == "InvalidSpec"] == [1]


def test_provider_mode_records_status_provider_name(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    assert env.get_claim("c")["status"]["provider"]["name"] == "p"


def test_a_mistyped_provider_names_the_nearest_and_the_claims_columns_say_so(env: ClaimEnv, devcluster) -> None:
    """The API server's own Table (what ``kubectl get rclaim -o wide`` prints): READY False and HEALTHY Unknown
    rather than blank, SYNCED and REASON the error, MESSAGE the error's message naming the provider meant."""
    env.configmap_provider("hello")
    env.configmap_provider("world")
    env.claim("c", {"provider": {"name": "helo"}})
    outcome = env.claim_outcome(env.converge("c"), "c")
    message = "ResourceProvider helo not found; did you mean hello?"
    assert isinstance(outcome, PermanentError) and outcome.message == message
    assert [e["message"] for e in env.events("c") if e["reason"] == "ProviderNotFound"] == [message]
    api = devcluster.api_client()
    response = api.call_api("GET", f"{api.configuration.host}/apis/{env.api}/namespaces/{env.ns}/resourceclaims",
                            header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    response.read()
    table = json.loads(response.data)
    names = [column["name"] for column in table["columnDefinitions"]]
    row = dict(zip(names, table["rows"][0]["cells"], strict=True))
    assert {name: row[name] for name in ("Healthy", "Ready", "Synced", "Bound", "Reason", "Message")} == {
        "Healthy": "Unknown", "Ready": "False", "Synced": "ProviderNotFound", "Bound": None,
        "Reason": "ProviderNotFound", "Message": message}


def test_spec_provider_name_is_immutable(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.configmap_provider("q")
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    claim = env.get_claim("c")
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"spec": {"provider": {"name": "q"}}})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError)
    assert "spec.provider is immutable" in env.condition("c", "Synced")["message"]
    assert env.claim_handle("c")["spec"]["provider"]["name"] == "p"
    assert claim["status"]["resourceHandle"]["name"] == env.get_claim("c")["status"]["resourceHandle"]["name"]


def test_missing_provider_is_a_permanent_error_and_resumes_when_it_appears(env: ClaimEnv) -> None:
    env.claim("c", {"provider": {"name": "later"}})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError) and outcome.reason == "ProviderNotFound"
    assert env.condition("c", "Synced")["reason"] == "ProviderNotFound"
    assert env.handles() == []
    env.configmap_provider("later")
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"].startswith("guid-")


def test_resources_mode_explicit_provider_is_looked_up_by_name(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"resources": [{"name": "one", "provider": {"name": "p"}, "template": {"data": {"a": "1"}}}]})
    env.converge("c")
    status = env.get_claim("c")["status"]
    assert status["resources"][0]["name"] == "one"
    assert status["resources"][0]["provider"] == env.provider_ref("p")


def test_resources_mode_template_matches_exactly_one_provider(env: ClaimEnv) -> None:
    env.configmap_provider("red", match={"metadata": {"labels": {"color": "red"}}})
    env.configmap_provider("blue", match={"metadata": {"labels": {"color": "blue"}}})
    env.claim("c", {"resources": [{"template": {"metadata": {"labels": {"color": "blue"}}}}]})
    env.converge("c")
    assert env.get_claim("c")["status"]["resources"][0]["provider"] == env.provider_ref("blue")


def test_resources_mode_template_matching_no_provider_is_a_permanent_error(env: ClaimEnv) -> None:
    env.configmap_provider("red", match={"metadata": {"labels": {"color": "red"}}})
    env.claim("c", {"resources": [{"template": {"metadata": {"labels": {"color": "green"}}}}]})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError)
    assert env.handles() == []


def test_resources_mode_template_matching_two_providers_is_a_permanent_error(env: ClaimEnv) -> None:
    env.configmap_provider("a", match={"kind": "ConfigMap"})
    env.configmap_provider("b", match={"kind": "ConfigMap"})
    env.claim("c", {"resources": [{"template": {"kind": "ConfigMap"}}]})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError)
    assert env.handles() == []


def test_provider_mode_sets_resource_claim_labels_and_annotations(env: ClaimEnv) -> None:
    env.configmap_provider("p", resourceClaimLabels={"team": "x"}, resourceClaimAnnotations={"note": "hi"})
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    metadata = env.get_claim("c")["metadata"]
    assert metadata["labels"]["team"] == "x"
    assert metadata["annotations"]["note"] == "hi"


def test_initialisation_fills_template_from_default_then_schema_defaults(env: ClaimEnv) -> None:
    env.configmap_provider(
        "p", default={"data": {"from-default": "d", "given": "default-loses"}},
        validation={"openAPIV3Schema": {"type": "object", "properties": {
            "data": {"type": "object", "properties": {"from-schema": {"type": "string", "default": "s"}}}}}})
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {"data": {"given": "mine"}}}]})
    env.converge("c")
    claim = env.get_claim("c")
    resource = claim["spec"]["resources"][0]
    assert resource["provider"] == env.provider_ref("p")
    assert resource["template"]["data"] == {"given": "mine", "from-default": "d", "from-schema": "s"}
    assert f"{env.d}/resource-claim-init-timestamp" in claim["metadata"]["annotations"]


def test_initialisation_renders_default_when_template_enabled(env: ClaimEnv) -> None:
    env.configmap_provider("p", template={"enable": True},
                           default={"data": {"owner": "{{ resource_claim.metadata.name }}-{{ resource_index }}"}})
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}]})
    env.converge("c")
    assert env.get_claim("c")["spec"]["resources"][0]["template"]["data"]["owner"] == "c-0"


def test_initialisation_runs_once(env: ClaimEnv) -> None:
    """A claim whose init annotation says it was initialised is not filled from the provider's default again."""
    env.configmap_provider("p", default={"data": {"x": "1"}})
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}]},
              annotations={"poolboy.gpte.redhat.com/resource-claim-init-timestamp": "2020-01-01T00:00:00Z"})
    env.claim("control", {"resources": [{"provider": {"name": "p"}, "template": {}}]})
    env.converge("c")
    env.converge("control")
    assert env.get_claim("control")["spec"]["resources"][0]["template"] == {"data": {"x": "1"}}, \
        "control: a new claim is initialised from the default"
    assert env.get_claim("c")["spec"]["resources"][0]["template"] == {}


def test_future_lifespan_start_does_nothing_until_then(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    start = env.converger.clock() + timedelta(hours=1)
    env.claim("c", {"provider": {"name": "p"}, "lifespan": {"start": ts(start)}})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, Result) and outcome.requeue_at == start
    claim = env.get_claim("c")
    assert not claim.get("status")
    assert f"{env.d}/resource-claim-init-timestamp" not in (claim["metadata"].get("annotations") or {})
    assert env.handles() == []
    env.converge("c", now=start)
    assert env.get_claim("c")["status"]["resourceHandle"]


def test_deleted_bound_claim_deletes_its_handle_and_loses_the_finalizer(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    handle_name = env.claim_handle("c")["metadata"]["name"]
    env.kube.delete(env.api, "ResourceClaim", "c", env.ns)
    env.converge("c")
    assert env.get_claim("c") is None
    handle = env.get_handle(handle_name)
    assert handle is None or handle["metadata"].get("deletionTimestamp")


def test_deleted_unbound_claim_just_loses_the_finalizer(env: ClaimEnv) -> None:
    env.claim("c", {"provider": {"name": "missing"}})
    env.converge("c")
    env.kube.delete(env.api, "ResourceClaim", "c", env.ns)
    env.converge("c")
    assert env.get_claim("c") is None


def test_legacy_finalizers_are_removed_on_deletion_and_never_added(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"provider": {"name": "p"}}, finalizers=[f"{env.d}/handler", f"{env.d}/handler-2"])
    env.converge("c")
    assert env.get_claim("c")["metadata"]["finalizers"] == [f"{env.d}/handler", f"{env.d}/handler-2", env.d]
    env.kube.delete(env.api, "ResourceClaim", "c", env.ns)
    env.converge("c")
    assert env.get_claim("c") is None

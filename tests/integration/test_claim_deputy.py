"""What a claim can make Poolboy do, seen from the claim (docs/security.md#6-poolboy-acts-only-on-what-it-made,
#7-secret-values-never-leak): a template aimed at a namespace the provider does not name is refused before anything
is bound, another's object at a rendered name is reported and never shown, and a Secret's values stay out of the
claim's status."""

from __future__ import annotations

import orjson

from poolboy.domain import redaction
from tests.integration.claim_support import ClaimEnv, env_fixture  # noqa: F401 - env_fixture provides "env"


def _elsewhere(env: ClaimEnv) -> str:
    namespace = f"{env.ns}-else"
    env.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return namespace


def test_a_template_aimed_at_another_namespace_is_refused_until_the_provider_allows_it(env: ClaimEnv) -> None:
    elsewhere = _elsewhere(env)
    env.provider("open", {"override": {"apiVersion": "v1", "kind": "ConfigMap"}})
    env.claim("c", {"resources": [{"provider": {"name": "open"}, "template": {"metadata": {"namespace": elsewhere}}}]})
    env.converge("c")
    claim = env.get_claim("c")
    synced = env.condition("c", "Synced")
    assert (synced["status"], synced["reason"]) == ("False", "ValidationFailed")
    assert f"metadata.namespace {elsewhere}" in synced["message"] and "allowedTargets" in synced["message"]
    assert elsewhere in claim["status"]["resources"][0]["validationError"]
    assert not claim["status"].get("resourceHandle"), "refused before anything is bound"
    assert [e["type"] for e in env.events("c") if e["reason"] == "ValidationFailed"] == ["Warning"]

    env.kube.patch_merge(env.api, "ResourceProvider", "open", env.op,
                         {"spec": {"allowedTargets": {"namespaces": [elsewhere]}}})
    env.converge("c")
    assert env.condition("c", "Synced")["status"] == "True"
    assert env.get_claim("c")["status"]["resources"][0]["reference"]["namespace"] == elsewhere


def test_a_conflict_on_the_handle_shows_on_the_claim_without_the_objects_contents(env: ClaimEnv) -> None:
    env.kube.create({"apiVersion": "v1", "kind": "ConfigMap", "data": {"password": "theirs"},
                     "metadata": {"name": "taken", "namespace": env.ns}})
    env.configmap_provider("p")
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {"metadata": {"name": "taken"}}}]})
    env.converge("c")
    synced = env.condition("c", "Synced")
    assert (synced["status"], synced["reason"]) == ("False", "ResourceConflict")
    assert f"ConfigMap taken in namespace {env.ns}" in synced["message"]
    assert b"theirs" not in orjson.dumps(env.get_claim("c"))
    assert [e["type"] for e in env.events("c") if e["reason"] == "ResourceConflict"] == ["Warning"]


def test_a_managed_secrets_values_stay_out_of_the_claims_status(env: ClaimEnv) -> None:
    env.provider("s", {"override": {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": env.ns},
                                    "stringData": {"password": "hunter2"}},
                       "readinessCheck": "true", "healthCheck": "true",
                       "statusRedactions": [{"pathMatch": "/metadata/labels/hint"}]})
    env.claim("c", {"resources": [{"provider": {"name": "s"},
                                   "template": {"metadata": {"labels": {"hint": "rhymes-with-thunder"}}}}]})
    env.converge("c")
    claim = env.get_claim("c")
    state = claim["status"]["resources"][0]["state"]
    assert state["data"] == {"password": redaction.REDACTED}
    assert state["metadata"]["labels"]["hint"] == redaction.REDACTED
    assert env.condition("c", "Ready")["status"] == "True"
    text = orjson.dumps(claim["status"]).decode()
    assert "hunter2" not in text and "aHVudGVyMg" not in text and "thunder" not in text


def test_values_a_claims_status_shows_from_before_the_rule_are_redacted_without_a_change(env: ClaimEnv) -> None:
    env.provider("s", {"override": {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": env.ns},
                                    "stringData": {"password": "hunter2"}}, "readinessCheck": "true"})
    env.claim("c", {"resources": [{"provider": {"name": "s"}, "template": {}}]})
    env.converge("c")
    claim = env.get_claim("c")
    claim["status"]["resources"][0]["state"]["data"] = {"password": "aHVudGVyMg=="}  # as shown before the rule
    env.kube.replace_status(claim)
    env.reconcile_claim("c")
    assert env.get_claim("c")["status"]["resources"][0]["state"]["data"] == {"password": redaction.REDACTED}

"""Handle → claim status (docs/behaviour.md#claim-status), conditions, auto-delete/detach
(docs/behaviour.md#auto-delete-and-auto-detach), lifespans of claims (docs/behaviour.md#lifespans).

Most tests write the handle's status by hand and run single claim reconciles, so they test the claim side only;
``test_managed_resource_state_is_mirrored_end_to_end`` runs every reconciler through the Converger.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest

from tests.integration.claim_support import ClaimEnv, env_fixture, parse_ts, ts  # noqa: F401 - env_fixture provides "env"


def _bound(env: ClaimEnv, **provider_spec: Any) -> dict:
    env.configmap_provider("p", **provider_spec)
    env.claim("c", {"resources": [{"name": "r", "provider": {"name": "p"}, "template": {}}]})
    env.reconcile_claim("c")
    return env.claim_handle("c")


def _configmap(env: ClaimEnv, name: str, handle: dict, data: dict | None = None,
               annotations: dict | None = None) -> dict:
    """A ConfigMap made for ``handle`` (its uid mark: a claim shows only what its handle may manage)."""
    marks = {f"{env.d}/resource-handle-uid": handle["metadata"]["uid"], **(annotations or {})}
    return env.kube.create({"apiVersion": "v1", "kind": "ConfigMap", "data": data or {},
                            "metadata": {"name": name, "namespace": env.ns, "annotations": marks}})


def _set_handle_status(env: ClaimEnv, name: str, status: dict) -> None:
    handle = env.get_handle(name)
    handle["status"] = status
    env.kube.replace_status(handle)


def _ref(env: ClaimEnv, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "namespace": env.ns}


# --- docs/behaviour.md#claim-status
# --------------------------------------------------------------------------------------------------------


def test_handle_resource_status_and_aggregates_are_mirrored(env: ClaimEnv) -> None:
    handle = _bound(env)
    _configmap(env, "cm1", handle, {"k": "v"})
    _set_handle_status(env, handle["metadata"]["name"], {
        "healthy": True, "ready": False, "summary": {"url": "http://x"},
        "resources": [{"name": "r", "reference": _ref(env, "cm1"), "healthy": True, "ready": False}]})
    env.reconcile_claim("c")
    status = env.get_claim("c")["status"]
    assert status["healthy"] is True and status["ready"] is False
    assert status["summary"] == {"url": "http://x"}
    entry = status["resources"][0]
    assert entry["name"] == "r"
    assert entry["reference"] == _ref(env, "cm1")
    assert entry["provider"] == env.provider_ref("p")
    assert entry["state"]["data"] == {"k": "v"}
    assert env.condition("c", "Ready")["status"] == "False"
    assert env.condition("c", "Healthy")["status"] == "True"


def test_aggregates_removed_when_absent_on_handle(env: ClaimEnv) -> None:
    handle = _bound(env)
    _set_handle_status(env, handle["metadata"]["name"], {"healthy": True, "ready": True, "summary": {"a": 1}})
    env.reconcile_claim("c")
    status = env.get_claim("c")["status"]
    assert (status["healthy"], status["ready"], status["summary"]) == (True, True, {"a": 1})
    _set_handle_status(env, handle["metadata"]["name"], {})
    env.reconcile_claim("c")
    status = env.get_claim("c")["status"]
    for key in ("healthy", "ready", "summary"):
        assert key not in status


def test_mirrored_state_is_pruned(env: ClaimEnv) -> None:
    handle = _bound(env)
    _configmap(env, "cm1", handle, annotations={f"{env.d}/resource-handle-name": "x", "keep": "1"})
    _set_handle_status(env, handle["metadata"]["name"], {"resources": [{"reference": _ref(env, "cm1")}]})
    env.reconcile_claim("c")
    state = env.get_claim("c")["status"]["resources"][0]["state"]
    assert state["metadata"]["annotations"] == {"keep": "1"}
    assert "managedFields" not in state["metadata"] and "generation" not in state["metadata"]
    assert state["metadata"]["resourceVersion"]


def test_handle_with_more_resources_extends_claim_status(env: ClaimEnv) -> None:
    handle = _bound(env)
    _set_handle_status(env, handle["metadata"]["name"], {"resources": [
        {"name": "r"}, {"name": "linked", "waitingFor": "Linked ResourceProvider"}]})
    env.reconcile_claim("c")
    resources = env.get_claim("c")["status"]["resources"]
    assert len(resources) == 2
    assert resources[0]["name"] == "r"
    assert resources[1]["waitingFor"] == "Linked ResourceProvider"


def test_converged_claim_generates_no_writes(env: ClaimEnv) -> None:
    _bound(env)
    env.reconcile_claim("c")
    rv = env.get_claim("c")["metadata"]["resourceVersion"]
    env.reconcile_claim("c")
    assert env.get_claim("c")["metadata"]["resourceVersion"] == rv


def test_first_ready_sets_first_ready_and_resets_end(env: ClaimEnv) -> None:
    handle = _bound(env, lifespan={"default": "2h", "maximum": "1d"})
    later = env.converger.clock() + timedelta(minutes=10)
    _set_handle_status(env, handle["metadata"]["name"], {"ready": True})
    env.reconcile_claim("c", now=later)
    claim = env.get_claim("c")
    lifespan = claim["status"]["lifespan"]
    assert lifespan["firstReady"] == ts(later)
    assert claim["spec"]["lifespan"]["end"] == ts(later + timedelta(hours=2))
    assert env.claim_handle("c")["spec"]["lifespan"]["end"] == ts(later + timedelta(hours=2))
    assert lifespan["end"] == ts(later + timedelta(hours=2))


def test_conditions_observe_the_generation_of_the_operators_own_spec_write(env: ClaimEnv) -> None:
    """First ready rewrites the claim's own ``spec.lifespan.end`` (a new generation); the status written in the same
    run describes that spec, so its conditions must carry the new generation: the watch event of the run's own
    write does not run the claim again, and ``kubectl wait`` compares the two."""
    handle = _bound(env, lifespan={"default": "2h", "maximum": "1d"})
    before = env.get_claim("c")["metadata"]["generation"]
    _set_handle_status(env, handle["metadata"]["name"], {"ready": True})
    env.reconcile_claim("c", now=env.converger.clock() + timedelta(minutes=10))
    claim = env.get_claim("c")
    assert claim["metadata"]["generation"] == before + 1  # the run wrote the claim's spec
    observed = {c["type"]: c.get("observedGeneration") for c in claim["status"]["conditions"]}
    assert observed == dict.fromkeys(("Synced", "Bound", "Ready", "Healthy"), claim["metadata"]["generation"])


def test_lifespan_maximum_written_as_single_unit(env: ClaimEnv) -> None:
    _bound(env, lifespan={"default": "1h", "maximum": "1d12h"})
    assert env.get_claim("c")["status"]["lifespan"]["maximum"] == "36h"


def test_templated_maximum_follows_claim_annotations(env: ClaimEnv) -> None:
    _bound(env, template={"enable": True}, lifespan={
        "default": "1h",
        "maximum": "{% if 'extended' in resource_claim.annotations %}3d{% else %}1d{% endif %}"})
    assert env.get_claim("c")["status"]["lifespan"]["maximum"] == "1d"
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"metadata": {"annotations": {"extended": "y"}}})
    env.reconcile_claim("c")
    assert env.get_claim("c")["status"]["lifespan"]["maximum"] == "3d"


def test_requeue_at_lifespan_end(env: ClaimEnv) -> None:
    env.configmap_provider("p", lifespan={"default": "1h"})
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}]})
    now = env.converger.clock()
    outcome = env.reconcile_claim("c", now=now)
    # the default warnings (24h,1h,10m): 24h and 1h are not shorter than the 1h lifespan, so 10m before the end
    assert outcome.requeue_at == now + timedelta(minutes=50)
    outcome = env.reconcile_claim("c", now=now + timedelta(minutes=50))
    assert outcome.requeue_at == now + timedelta(hours=1)
    lifespan = env.get_claim("c")["status"]["lifespan"]
    assert lifespan["warnings"] == {"end": lifespan["end"], "sent": ["10m"]}


def test_managed_resource_state_is_mirrored_end_to_end(env: ClaimEnv) -> None:
    env.configmap_provider("p", readinessCheck="true", healthCheck="true")
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {"data": {"hello": "world"}}}]})
    env.converge("c")
    status = env.get_claim("c")["status"]
    entry = status["resources"][0]
    assert entry["reference"]["kind"] == "ConfigMap"
    assert entry["state"]["data"] == {"hello": "world"}
    assert status.get("ready") is True
    assert env.condition("c", "Ready")["status"] == "True"


def test_handle_side_error_is_shown_on_the_claim_with_one_event_and_clears_when_fixed(env: ClaimEnv) -> None:
    """A definition without apiVersion/kind is found by the handle reconciler, in the operator namespace the user
    may not read: the claim must carry it as Synced=False plus a Warning Event, and clear it once fixed."""
    env.provider("bare", {"override": {"metadata": {"namespace": env.ns}}})
    env.claim("c", {"resources": [{"provider": {"name": "bare"}, "template": {"data": {"a": "b"}}}]})
    env.converge("c")
    synced = env.condition("c", "Synced")
    assert (synced["status"], synced["reason"]) == ("False", "InvalidDefinition")
    assert "no apiVersion or kind" in synced["message"]
    env.converge("c")
    assert [(e["type"], e["count"]) for e in env.events("c") if e["reason"] == "InvalidDefinition"] == [("Warning", 1)]

    claim = env.get_claim("c")
    claim["spec"]["resources"][0]["template"].update({"apiVersion": "v1", "kind": "ConfigMap"})
    env.kube.replace(claim)
    env.converge("c")
    assert env.condition("c", "Synced")["status"] == "True"
    assert env.get_claim("c")["status"]["resources"][0]["reference"]["kind"] == "ConfigMap"


# --- docs/behaviour.md#auto-delete-and-auto-detach
# --------------------------------------------------------------------------------------------------------


def test_auto_delete_deletes_the_claim(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}],
                    "autoDelete": {"when": "status.summary is defined and status.summary.done | bool"}})
    env.reconcile_claim("c")
    handle = env.claim_handle("c")
    _set_handle_status(env, handle["metadata"]["name"], {"summary": {"done": "true"}})
    env.converge("c")
    assert env.get_claim("c") is None


def test_auto_detach_detaches_deletes_handle_and_keeps_claim(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}],
                    "autoDetach": {"when": "resource_handle.status.summary.detach | default(false)"}})
    env.reconcile_claim("c")
    handle = env.claim_handle("c")
    _set_handle_status(env, handle["metadata"]["name"], {"summary": {"detach": True}})
    env.reconcile_claim("c")
    claim = env.get_claim("c")
    assert claim["status"]["resourceHandle"]["detached"] is True
    gone = env.get_handle(handle["metadata"]["name"])
    assert gone is None or gone["metadata"].get("deletionTimestamp")


def test_auto_delete_error_is_a_warning_and_false(env: ClaimEnv, caplog: pytest.LogCaptureFixture) -> None:
    env.configmap_provider("p")
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}],
                    "autoDelete": {"when": "1 / 0"}})
    with caplog.at_level(logging.WARNING, logger="poolboy.reconcilers.claim.lifecycle"):
        env.reconcile_claim("c")
        env.reconcile_claim("c")
    claim = env.get_claim("c")
    assert claim is not None and not claim["metadata"].get("deletionTimestamp")  # false: not deleted
    assert env.claim_handle("c") is not None  # and its handle stays
    assert any("autoDelete.when failed" in record.getMessage() for record in caplog.records), caplog.text


# --- docs/behaviour.md#lifespans
# --------------------------------------------------------------------------------------------------------


def _detached_claim(env: ClaimEnv, end: str) -> None:
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}]})
    claim = env.get_claim("c")
    claim["status"] = {"resourceHandle": {"apiVersion": env.api, "kind": "ResourceHandle", "name": "guid-old00",
                                          "namespace": env.op, "detached": True},
                       "lifespan": {"start": "2020-01-01T00:00:00Z", "end": end}}
    env.kube.replace_status(claim)


def test_detached_claim_expires_at_status_lifespan_end(env: ClaimEnv) -> None:
    now = env.converger.clock()
    _detached_claim(env, ts(now - timedelta(seconds=1)))
    env.reconcile_claim("c", now=now)
    claim = env.get_claim("c")
    assert claim is None or claim["metadata"].get("deletionTimestamp")


def test_detached_claim_before_end_is_left_alone_and_requeued(env: ClaimEnv) -> None:
    now = env.converger.clock()
    end = now + timedelta(hours=1)
    _detached_claim(env, ts(end))
    outcome = env.reconcile_claim("c", now=now)
    assert outcome.requeue_at == end
    assert env.handles() == []
    assert parse_ts(env.get_claim("c")["status"]["lifespan"]["end"]) == end

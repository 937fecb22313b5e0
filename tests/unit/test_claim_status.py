"""Pure claim-status helpers: state pruning, newest observation, resource mirroring (docs/behaviour.md#claim-status,
#hard-cases)."""

from __future__ import annotations

from poolboy.domain import claim_status

D = "poolboy.gpte.redhat.com"


def _resource(rv: str, uid: str = "u1", **extra: object) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "ns", "uid": uid, "resourceVersion": rv, **extra}}


def test_prune_state_removes_domain_annotations_generation_managed_fields_and_diffbase() -> None:
    live = _resource("7", generation=3, managedFields=[{"manager": "x"}],
                     annotations={f"{D}/resource-handle-name": "guid-abcde", "keep": "yes"})
    live["status"] = {"diffBase": "{...}", "phase": "Ready"}
    state = claim_status.prune_state(live, D)
    assert state["metadata"] == {"name": "cm", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                                 "annotations": {"keep": "yes"}}
    assert state["status"] == {"phase": "Ready"}
    assert live["metadata"]["generation"] == 3, "the input must not be mutated"


def test_prune_state_drops_annotations_map_that_only_had_poolboy_keys() -> None:
    state = claim_status.prune_state(_resource("1", annotations={f"{D}/resource-index": "0"}), D)
    assert "annotations" not in state["metadata"]


def test_newest_state_shows_what_the_run_observed() -> None:
    stored, observed = _resource("rv-12"), _resource("rv-9")  # opaque: no order can be read off them
    assert claim_status.newest_state(stored, observed) is observed


def test_newest_state_keeps_the_stored_copy_of_the_same_version() -> None:
    stored = _resource("Zq1", extra="stored")
    assert claim_status.newest_state(stored, _resource("Zq1")) is stored


def test_newest_state_prefers_a_recreated_resource() -> None:
    recreated = _resource("rv-3", uid="u2")
    assert claim_status.newest_state(_resource("rv-3"), recreated) is recreated


def test_newest_state_keeps_stored_when_nothing_observed() -> None:
    stored = _resource("5")
    assert claim_status.newest_state(stored, None) is stored


def test_mirror_resources_keeps_claim_name_and_validation_error_and_appends_extra_handle_entries() -> None:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "ns"}
    provider = {"apiVersion": f"{D}/v1", "kind": "ResourceProvider", "name": "p", "namespace": "op"}
    handle = {"spec": {"resources": [{"provider": provider, "name": "h0"}, {"provider": provider, "name": "h1"}]},
              "status": {"resources": [{"name": "h0", "reference": ref, "healthy": True, "ready": False},
                                       {"name": "h1", "waitingFor": "Linked ResourceProvider"}]}}
    claim_resources = [{"name": "mine", "validationError": "nope", "ready": True}]
    result = claim_status.mirror_resources(claim_resources, handle, {0: _resource("4")})
    assert result[0]["name"] == "mine"
    assert result[0]["validationError"] == "nope"
    assert result[0]["reference"] == ref
    assert result[0]["healthy"] is True and result[0]["ready"] is False
    assert result[0]["provider"] == provider
    assert result[0]["state"]["metadata"]["resourceVersion"] == "4"
    assert result[1] == {"name": "h1", "provider": provider, "waitingFor": "Linked ResourceProvider"}
    assert claim_resources == [{"name": "mine", "validationError": "nope", "ready": True}]


def test_mirror_resources_removes_keys_absent_on_the_handle() -> None:
    handle = {"spec": {"resources": [{"provider": {"name": "p"}}]}, "status": {"resources": [{}]}}
    result = claim_status.mirror_resources([{"name": "a", "healthy": True, "waitingFor": "ResourceClaim"}],
                                           handle, {})
    assert "healthy" not in result[0] and "waitingFor" not in result[0]


def test_copy_aggregates_copies_and_removes() -> None:
    status = {"healthy": True, "ready": True, "summary": {"old": 1}}
    claim_status.copy_aggregates(status, {"status": {"ready": False, "summary": {"url": "x"}}})
    assert status == {"ready": False, "summary": {"url": "x"}}

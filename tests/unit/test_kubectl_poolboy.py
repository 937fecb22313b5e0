"""``kubectl poolboy``'s trace, rendering and explanation (:mod:`poolboy_kubectl`), from claims, handles, pools,
providers and a ConfigMap recorded from a running stack (``kubectl_poolboy_recorded.yaml``): as an administrator sees
them, and as a user who may read only the claim's namespace (every operator object :class:`Unreadable`)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.rest import ApiException

from poolboy_kubectl import render, trace, why
from poolboy_kubectl.cli import UsageError, claim_name
from poolboy_kubectl.observed import ManagedResource, Observed, Unreadable
from poolboy_kubectl.reading import pool_of, providers_of, refusal, resource_entries

RECORDED: dict[str, dict[str, Any]] = yaml.safe_load(
    (Path(__file__).with_name("kubectl_poolboy_recorded.yaml")).read_text())
NOW = datetime(2026, 1, 1, tzinfo=UTC)
D = "poolboy.gpte.redhat.com"


def recorded(case: str, kind: str) -> dict[str, Any]:
    return copy.deepcopy(RECORDED[case][kind])


def forbidden(kind: str, obj: dict[str, Any]) -> Unreadable:
    return Unreadable(kind, obj["metadata"]["namespace"], obj["metadata"]["name"], "forbidden")


def ready_as_admin() -> Observed:
    claim, handle = recorded("ready", "claim"), recorded("ready", "handle")
    entries = resource_entries(claim, handle)
    return Observed(claim, handle, recorded("ready", "pool"), [recorded("ready", "provider")],
                    [ManagedResource(entries[0], recorded("ready", "resource"))])


def ready_as_editor() -> Observed:
    """What a user with ``edit`` in the claim's namespace gets: the claim and its ConfigMap, nothing else."""
    claim, handle = recorded("ready", "claim"), recorded("ready", "handle")
    (entry,) = resource_entries(claim, None)
    return Observed(claim, forbidden("ResourceHandle", handle), None,
                    [forbidden("ResourceProvider", recorded("ready", "provider"))],
                    [ManagedResource(entry, recorded("ready", "resource"))])


def kinds(node: trace.Node) -> list[str]:
    return [f"{node.kind}/{node.name}", *(k for child in node.children for k in kinds(child))]


# --- the trace ---------------------------------------------------------------------------------------------------


def test_a_ready_claim_traces_to_its_handle_and_below_it_the_pool_provider_and_resource() -> None:
    observed = ready_as_admin()
    root = trace.build(observed)
    handle, pool, provider = observed.handle, observed.pool, observed.providers[0]
    assert isinstance(handle, dict) and isinstance(pool, dict) and isinstance(provider, dict)
    config_map = observed.resources[0].reference["name"]
    assert kinds(root) == ["ResourceClaim/hello", f"ResourceHandle/{handle['metadata']['name']}",
                           f"ResourcePool/{pool['metadata']['name']}",
                           f"ResourceProvider/{provider['metadata']['name']}", f"ConfigMap/{config_map}"]
    (handle_node,) = root.children
    assert [(n.ready, n.status) for n in (root, handle_node, handle_node.children[-1])] == [
        (True, "Ready"), (True, "Ready"), (True, "Ready")]
    assert {c["type"]: c["status"] for c in root.conditions} == {
        "Synced": "True", "Bound": "True", "Ready": "True", "Healthy": "True"}
    assert handle_node.children[0].status.startswith("1 available"), "the pool refilled after the bind"


def test_the_table_is_a_tree_of_aligned_columns_with_each_objects_conditions() -> None:
    text = render.table(trace.build(ready_as_admin()), [])
    header, claim, handle, *below = text.splitlines()
    assert header.split() == list(render.HEADERS)
    starts = {line.index(word) for line, word in ((header, "READY"), (claim, "True"), (handle, "True"))}
    assert len(starts) == 1, text
    assert handle.startswith("└─ ResourceHandle/") and below[-1].startswith("   └─ ConfigMap/"), text
    assert "Bound=True" in claim and "ResourcesReady" in claim, claim


def test_an_editor_sees_the_claims_record_of_what_it_may_not_read_and_is_told_so() -> None:
    observed = ready_as_editor()
    root = trace.build(observed)
    (handle,) = root.children
    assert (handle.unreadable, handle.ready, handle.shown_from) == ("forbidden", True, trace.FROM_CLAIM)
    assert [child.kind for child in handle.children] == ["ResourceProvider", "ConfigMap"]
    assert handle.children[1].status == "Ready", "the ConfigMap in the user's namespace is read live"
    text = render.table(root, observed.unreadable)
    handle_name = observed.claim["status"]["resourceHandle"]["name"]
    assert f"cannot read ResourceHandle poolboy/{handle_name}: forbidden" in text.splitlines()
    assert "True*" in next(line for line in text.splitlines() if "ResourceHandle/" in line)


def test_the_json_trace_is_the_same_tree_with_the_unreadable_reads() -> None:
    observed = ready_as_editor()
    parsed = json.loads(render.as_json(trace.build(observed), observed.unreadable))
    assert parsed["trace"]["children"][0]["unreadable"] == "forbidden"
    assert [u["kind"] for u in parsed["unreadable"]] == ["ResourceHandle", "ResourceProvider"]


def test_a_resource_that_cannot_be_read_shows_its_mirrored_state() -> None:
    claim = recorded("not_ready", "claim")
    (entry,) = resource_entries(claim, recorded("not_ready", "handle"))
    ref = entry["reference"]
    resource = ManagedResource(entry, Unreadable(ref["kind"], ref["namespace"], ref["name"], "forbidden"))
    node = trace.build(Observed(claim, recorded("not_ready", "handle"), None, [], [resource])).children[0].children[0]
    assert (node.kind, node.ready, node.status) == ("ConfigMap", False, "cannot read: forbidden; Not ready")
    assert resource.object == entry["state"], "the claim's last copy of the resource stands in for it"


# --- why -----------------------------------------------------------------------------------------------------------


def test_why_a_ready_claim_says_ready() -> None:
    explained = why.explain(ready_as_editor(), NOW)
    assert (explained.ready, explained.verdict, explained.reasons) == (True, "Ready", [])
    assert render.explanation(explained) == "Ready\n", "what it could not read did not matter"


def test_why_a_waiting_claim_gives_its_place_in_the_queue_and_no_promised_wait() -> None:
    claim, pool = recorded("waiting", "claim"), recorded("waiting", "pool")
    explained = why.explain(Observed(claim, None, forbidden("ResourcePool", pool)), NOW)
    assert not explained.ready
    first, *rest = explained.reasons
    assert first.startswith(f"Bound=False NoMatchingHandle: Waiting for a ResourceHandle of ResourcePool "
                            f"{pool['metadata']['name']}: position 1 of 1"), first
    assert any(r.startswith("No expected wait yet") for r in rest), rest
    assert f"cannot read ResourcePool poolboy/{pool['metadata']['name']}: forbidden" in rest


def test_why_a_waiting_claim_gives_the_expected_wait_its_pool_measured() -> None:
    claim = recorded("waiting", "claim")
    claim["status"]["queue"].update({"position": 3, "waiting": 12, "expectedWait": "4m", "timeToReady": "2m"})
    first, *rest = why.explain(Observed(claim), NOW).reasons
    assert "position 3 of 12, expected wait about 4m (pool handles take about 2m to become ready)" in first
    assert not any(r.startswith("No expected wait") for r in rest)


def test_why_an_invalid_provider_gives_the_claims_error_and_the_providers_own() -> None:
    claim, provider = recorded("invalid_provider", "claim"), recorded("invalid_provider", "provider")
    as_admin = why.explain(Observed(claim, providers=[provider]), NOW)
    assert as_admin.reasons[0].startswith("Synced=False ProviderInvalid: ResourceProvider "), as_admin.reasons
    assert "banana" in as_admin.reasons[0]
    assert any(r.startswith(f"ResourceProvider poolboy/{provider['metadata']['name']}: InvalidSpec: ")
               for r in as_admin.reasons), as_admin.reasons
    as_editor = why.explain(Observed(claim, providers=[forbidden("ResourceProvider", provider)]), NOW)
    assert as_editor.reasons[0] == as_admin.reasons[0]
    assert as_editor.reasons[-2:] == [f"cannot read ResourceProvider poolboy/{provider['metadata']['name']}: "
                                      "forbidden", why.FROM_CLAIM]


def test_why_says_a_parameter_error_once_when_the_unmet_condition_already_quotes_it() -> None:
    claim = recorded("missing_provider", "claim")
    errors = ["spec.provider.parameterValues.size: 0 is less than the minimum of 1", "color: not one of red, blue"]
    claim["status"]["provider"] = {"name": "p", "validationErrors": errors}
    synced = next(c for c in claim["status"]["conditions"] if c["type"] == "Synced")
    synced.update(reason="ValidationFailed", message="; ".join(errors[:1]))  # the second is not in the message
    reasons = why.explain(Observed(claim), NOW).reasons
    assert sum(errors[0] in r for r in reasons) == 1, reasons
    assert f"Parameter: {errors[1]}" in reasons


def test_why_a_missing_provider_gives_the_first_unmet_condition() -> None:
    explained = why.explain(Observed(recorded("missing_provider", "claim")), NOW)
    assert explained.reasons[0].startswith("Synced=False ProviderNotFound: "), explained.reasons
    assert "helo" in explained.reasons[0]


def test_why_a_bound_claim_that_is_not_ready_names_the_resource_that_is_not() -> None:
    claim, handle = recorded("not_ready", "claim"), recorded("not_ready", "handle")
    (entry,) = resource_entries(claim, handle)
    explained = why.explain(Observed(claim, handle, None, [], [ManagedResource(entry)]), NOW)
    ref = entry["reference"]
    assert explained.reasons[0].startswith("Ready=False "), explained.reasons
    assert f"ConfigMap {ref['namespace']}/{ref['name']}: Not ready" in explained.reasons


def test_why_a_ready_condition_of_an_older_spec_is_not_ready_yet() -> None:
    claim = recorded("ready", "claim")
    claim["metadata"]["generation"] = 1 + max(c.get("observedGeneration", 0) for c in claim["status"]["conditions"])
    explained = why.explain(Observed(claim), NOW)
    assert not explained.ready and "has not finished with the latest change" in explained.reasons[0]


def test_why_a_detached_claim_says_it_is_a_record_until_its_lifespan_end() -> None:
    claim = recorded("ready", "claim")
    handle = claim["status"]["resourceHandle"]
    handle["detached"] = True
    claim["metadata"]["generation"] = 1 + max(c.get("observedGeneration", 0) for c in claim["status"]["conditions"])
    claim["status"]["lifespan"] = {"end": "2026-01-02T00:00:00Z"}
    explained = why.explain(Observed(claim), NOW)
    assert not explained.ready
    metadata = claim["metadata"]
    assert explained.verdict == f"ResourceClaim {metadata['namespace']}/{metadata['name']} is detached."
    assert explained.reasons[0].startswith(f"Detached from ResourceHandle {handle['name']} (autoDetach)")
    assert explained.reasons[1] == "It is deleted at its lifespan end, 2026-01-02T00:00:00Z."
    assert not any("latest change" in r for r in explained.reasons)  # a detached claim is not processed: no nag


def test_why_a_claim_not_yet_processed_asks_whether_the_operator_runs() -> None:
    claim = {"metadata": {"name": "new", "namespace": "demo"}, "spec": {"provider": {"name": "p"}}}
    explained = why.explain(Observed(claim), NOW)
    assert explained.verdict == "ResourceClaim demo/new is not Ready."
    assert "is the operator running?" in explained.reasons[0]


# --- what is read, and how a failed read is said ---------------------------------------------------------------------


def test_without_the_handle_the_claim_names_its_providers_and_pool() -> None:
    claim = recorded("waiting", "claim")
    assert providers_of(claim, None, "poolboy") == [("poolboy", claim["spec"]["provider"]["name"])]
    pool = claim["metadata"]["annotations"][f"{D}/resource-pool-name"]
    assert pool_of(claim, None, D, "poolboy") == ("poolboy", pool)
    handle = recorded("ready", "handle")
    made_by = handle["spec"]["resourcePool"]["name"]
    assert pool_of(recorded("ready", "claim"), handle, D, "poolboy") == ("poolboy", made_by)


def test_the_handles_record_of_a_resource_wins_over_the_claims_mirror() -> None:
    claim, handle = recorded("ready", "claim"), recorded("ready", "handle")
    handle["status"]["resources"][0]["ready"] = False
    (entry,) = resource_entries(claim, handle)
    assert entry["ready"] is False and entry["state"] == claim["status"]["resources"][0]["state"]


@pytest.mark.parametrize(("status", "said"), [(403, "forbidden"), (404, "not found"), (500, "500 boom")])
def test_a_failed_read_is_said_in_a_few_words(status: int, said: str) -> None:
    assert refusal(ApiException(status=status, reason="boom")) == said


@pytest.mark.parametrize("target", [["claim", "x"], ["rclaim/x"], ["resourceclaims.poolboy.gpte.redhat.com/x"],
                                    ["ResourceClaim", "x"]])
def test_a_claim_is_named_as_kubectl_names_it(target: list[str]) -> None:
    assert claim_name(target) == "x"


@pytest.mark.parametrize("target", [["pod", "x"], ["resourceclaim.resource.k8s.io/x"], ["claim"], ["x"]])
def test_anything_else_is_a_usage_error(target: list[str]) -> None:
    with pytest.raises(UsageError):
        claim_name(target)

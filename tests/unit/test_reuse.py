"""Reuse of released pool handles (docs/pools.md, "Reuse"; docs/behaviour.md#deletion): which handles are reused,
the release write that unbinds and marks a handle at once, and the write that makes it fresh for its pool."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest

from poolboy.domain import reuse
from poolboy.domain.binding.candidates import index_entries, is_unbound
from poolboy.domain.matching import exclusion_reason
from poolboy.domain.provider_validation import problems
from poolboy.utils.jsonpatch import unescape_pointer

D = "poolboy.gpte.redhat.com"
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
POOL_REF = {"apiVersion": f"{D}/v1", "kind": "ResourcePool", "name": "labs", "namespace": "poolboy"}
CLAIM_REF = {"apiVersion": f"{D}/v1", "kind": "ResourceClaim", "name": "mine", "namespace": "user-ns"}


def bound_pool_handle(**spec: object) -> dict:
    """A handle the pool ``labs`` made, bound to claim user-ns/mine as a bind leaves it."""
    return {
        "apiVersion": f"{D}/v1", "kind": "ResourceHandle",
        "metadata": {"name": "guid-abcde", "namespace": "poolboy", "resourceVersion": "42",
                     "labels": {f"{D}/resource-pool-name": "labs", f"{D}/resource-pool-namespace": "poolboy",
                                f"{D}/resource-claim-name": "mine", f"{D}/resource-claim-namespace": "user-ns"},
                     "annotations": {f"{D}/resource-claim-uid": "uid-1", f"{D}/resource-pool-revision": "r1"}},
        "spec": {"resourcePool": POOL_REF, "resourceClaim": CLAIM_REF,
                 "provider": {"name": "vm", "parameterValues": {"size": "large", "owner": "alice"}},
                 "resources": [{"provider": {"name": "vm"}, "name": "claimed-name", "template": {"spec": {"a": 1}}}],
                 "lifespan": {"default": "1d", "end": "2026-01-02T12:00:00Z"}, **spec},
    }


def apply(handle: dict, ops: list[dict]) -> dict:
    """The handle after a JSON patch whose resourceVersion test passes, as the API server would leave it."""
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": handle["metadata"]["resourceVersion"]}
    result = copy.deepcopy(handle)
    for op in ops[1:]:
        *parents, last = [unescape_pointer(token) for token in op["path"].split("/")[1:]]
        node = result
        for token in parents:
            node = node[token]
        if op["op"] == "remove":
            del node[last]
        else:
            assert op["op"] == "add", op
            node[last] = copy.deepcopy(op["value"])
    return result


# --- which handles are reused ----------------------------------------------------------------------------------


def test_only_a_pool_handle_has_a_reuse_provider_its_own_or_its_first_resources() -> None:
    handle = bound_pool_handle()
    assert reuse.reuse_provider(handle) == "vm"
    resources_mode = bound_pool_handle()
    del resources_mode["spec"]["provider"]
    resources_mode["spec"]["resources"] = [{"provider": {"name": "disk"}}, {"provider": {"name": "vm"}}]
    assert reuse.reuse_provider(resources_mode) == "disk"
    claims_own = bound_pool_handle()
    del claims_own["spec"]["resourcePool"]
    assert reuse.reuse_provider(claims_own) is None  # deleted as always


def test_reuse_spec_defaults_and_invalid_values() -> None:
    assert reuse.parse("vm", None) is None
    parsed = reuse.parse("vm", {})
    assert parsed == reuse.Reuse("vm", None, None, timedelta(minutes=30))
    parsed = reuse.parse("vm", {"cleanupPatch": {"spec": {"wipe": "{{ guid }}"}}, "cleanedCheck": "status.wiped",
                                "cleanupTimeout": "5s"})
    assert parsed is not None and parsed.cleanup_timeout == timedelta(seconds=5)
    assert parsed.cleanup_patch == {"spec": {"wipe": "{{ guid }}"}} and parsed.cleaned_check == "status.wiped"
    for bad in ({"cleanupTimeout": "soon"}, {"cleanupTimeout": "0s"}, {"cleanupPatch": "wipe"}, "yes"):
        with pytest.raises(reuse.InvalidReuse, match=r"ResourceProvider vm spec\.reuse"):
            reuse.parse("vm", bad)


# --- the release ---------------------------------------------------------------------------------------------------


def test_the_release_unbinds_and_marks_the_handle_unbindable_in_one_write() -> None:
    handle = bound_pool_handle()
    assert not is_unbound(handle, D)
    released = apply(handle, reuse.release_ops(handle, D, NOW))
    assert "resourceClaim" not in released["spec"]
    labels = released["metadata"]["labels"]
    assert f"{D}/resource-claim-name" not in labels and f"{D}/resource-claim-namespace" not in labels
    assert labels[f"{D}/resource-pool-name"] == "labs"
    assert f"{D}/resource-claim-uid" not in released["metadata"]["annotations"]
    assert released["spec"]["lifespan"] == {"default": "1d"}  # the claim's end goes with the claim
    # the same write that unbinds it keeps every claim away: neither the index nor the exclusions offer it
    assert reuse.is_released(released, D)
    assert not is_unbound(released, D)
    assert index_entries(released, D) == []
    assert exclusion_reason({"spec": {"resources": released["spec"]["resources"]}}, released, {}, NOW,
                            domain=D) == "cleaning"
    assert reuse.released(released, D) == (NOW, {"namespace": "user-ns", "name": "mine"})


def test_a_release_is_tested_against_the_version_read() -> None:
    handle = bound_pool_handle()
    ops = reuse.release_ops(handle, D, NOW)
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}


def test_cleaning_status_says_since_when_until_when_and_the_claim() -> None:
    spec = reuse.Reuse("vm", None, None, timedelta(minutes=10))
    assert reuse.cleaning_status(NOW, spec, {"namespace": "n", "name": "c"}, False) == {
        "since": "2026-01-01T12:00:00Z", "deadline": "2026-01-01T12:10:00Z",
        "claim": {"namespace": "n", "name": "c"}, "patched": False}
    assert reuse.deadline(NOW, spec) == NOW + timedelta(minutes=10)


def test_an_unreadable_release_record_gives_no_time() -> None:
    handle = bound_pool_handle()
    handle["metadata"]["annotations"][f"{D}/{reuse.RELEASED_ANNOTATION}"] = "{not json"
    assert reuse.released(handle, D) == (None, {})


# --- fresh again ---------------------------------------------------------------------------------------------------


def test_a_cleaned_provider_mode_handle_gets_the_pools_values_and_a_new_lifespan_and_is_bindable() -> None:
    handle = apply(bound_pool_handle(), reuse.release_ops(bound_pool_handle(), D, NOW))
    handle["metadata"]["resourceVersion"] = "43"
    pool = {"spec": {"minAvailable": 1, "provider": {"name": "vm", "parameterValues": {"size": "large"}}}}
    lifespan = {"default": "1d", "end": "2026-01-01T13:00:00Z"}
    ops = reuse.fresh_ops(handle, pool, lifespan, D)
    assert ops is not None
    fresh = apply(handle, ops)
    assert fresh["spec"]["provider"] == {"name": "vm", "parameterValues": {"size": "large"}}
    assert fresh["spec"]["lifespan"] == lifespan
    assert f"{D}/{reuse.RELEASED_ANNOTATION}" not in fresh["metadata"]["annotations"]
    assert fresh["metadata"]["annotations"][f"{D}/resource-pool-revision"] == "r1"
    assert is_unbound(fresh, D) and not reuse.is_released(fresh, D)
    assert index_entries(fresh, D)  # offered to claims again


def test_a_cleaned_resources_mode_handle_gets_the_pools_templates_back_and_keeps_its_references() -> None:
    handle = bound_pool_handle()
    del handle["spec"]["provider"]
    handle["spec"]["resources"] = [{"provider": {"name": "vm"}, "name": "claimed", "template": {"spec": {"a": 2}},
                                    "reference": {"apiVersion": "v1", "kind": "Machine", "name": "m1"}}]
    handle = apply(handle, reuse.release_ops(handle, D, NOW))
    pool = {"spec": {"resources": [{"provider": {"name": "vm"}, "template": {"spec": {"a": 1}}}]}}
    ops = reuse.fresh_ops(handle, pool, {}, D)
    assert ops is not None
    fresh = apply(handle, ops)
    assert fresh["spec"]["resources"] == [{"provider": {"name": "vm"}, "template": {"spec": {"a": 1}},
                                           "reference": {"apiVersion": "v1", "kind": "Machine", "name": "m1"}}]
    assert "lifespan" not in fresh["spec"]  # the pool gives none


def test_a_handle_with_more_resources_than_its_pools_cannot_be_fresh() -> None:
    handle = bound_pool_handle()
    del handle["spec"]["provider"]
    handle["spec"]["resources"] = [{"provider": {"name": "vm"}}, {"provider": {"name": "disk"}}]
    pool = {"spec": {"resources": [{"provider": {"name": "vm"}}]}}
    assert reuse.fresh_ops(handle, pool, {}, D) is None


# --- the provider's own check ---------------------------------------------------------------------------------------


def test_a_reuse_patch_or_check_that_does_not_compile_makes_the_provider_invalid() -> None:
    found = problems({"reuse": {"cleanupPatch": {"spec": {"wipe": "{{ guid "}}, "cleanedCheck": "status.wiped == "}})
    assert [path for path, _ in found] == ["spec.reuse.cleanupPatch.spec.wipe", "spec.reuse.cleanedCheck"]
    assert problems({"reuse": REUSE_OK}) == []


REUSE_OK = {"cleanupPatch": {"spec": {"wipe": "{{ guid }}"}}, "cleanedCheck": "status.wiped == spec.wipe",
            "cleanupTimeout": "10m"}

"""``matching.template_hash``: the label a claim uses to find exact-match handles (spec §3.8 ranking 1–3).

The property that makes the binding shortcut safe: equal hashes imply the handle is a candidate as far as
providers and templates go and scores zero on ranking criteria 1–3 (count, names, diff ops).
"""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from poolboy.matching import _rank_key, exclusion_reason, rank_candidates, template_hash

NOW = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
BASE = [{"provider": {"name": "p"}, "template": {"spec": {"value": "foo"}, "kind": "X", "apiVersion": "v1"}}]


def test_hash_is_short_stable_and_a_valid_label_value() -> None:
    value = template_hash(BASE)
    assert len(value) == 20 and value.isalnum() and value == value.lower()
    # pinned: the same in every process and Python version (no hash randomisation, sorted keys); a change here
    # orphans the labels of existing handles until their next reconcile, so it must be deliberate
    assert value == "b38f4366ac1b63dea33f"
    assert template_hash([{"provider": {"name": "p"}, "template": {"a": 1}}]) == "dc2470143cd303fb4af2"


def test_key_order_and_provider_reference_details_do_not_matter() -> None:
    reordered = [{"template": {"apiVersion": "v1", "kind": "X", "spec": {"value": "foo"}},
                  "provider": {"namespace": "poolboy", "kind": "ResourceProvider", "name": "p",
                               "apiVersion": "poolboy.gpte.redhat.com/v1"}}]
    assert template_hash(reordered) == template_hash(BASE)


def test_missing_template_equals_empty_template_and_missing_name_equals_empty_name() -> None:
    assert template_hash([{"provider": {"name": "p"}}]) == template_hash([{"provider": {"name": "p"}, "template": {}}])
    assert template_hash([{"provider": {"name": "p"}, "name": ""}]) == template_hash([{"provider": {"name": "p"}}])


def test_everything_ranking_criteria_1_to_3_compare_changes_the_hash() -> None:
    variants = [
        [],
        BASE + BASE,
        [{**BASE[0], "provider": {"name": "q"}}],
        [{**BASE[0], "name": "r"}],
        [{**BASE[0], "template": {**BASE[0]["template"], "spec": {"value": "bar"}}}],
        [{**BASE[0], "template": {**BASE[0]["template"], "extra": None}}],
        [{"provider": {"name": "p"}, "template": {"n": 1}}],
    ]
    hashes = {template_hash(v) for v in variants} | {template_hash(BASE)}
    assert len(hashes) == len(variants) + 1


def test_json_types_are_distinguished() -> None:
    one, one_float, true = ([{"provider": {"name": "p"}, "template": {"n": value}}] for value in (1, 1.0, True))
    assert len({template_hash(one), template_hash(one_float), template_hash(true)}) == 3


def test_not_computable_gives_none() -> None:
    assert template_hash(None) is None
    assert template_hash({"provider": {"name": "p"}}) is None
    assert template_hash([{"provider": {"name": "p"}, "template": {"x": object()}}]) is None


# --- the property the shortcut relies on ------------------------------------------------------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b"]))
_json = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["x", "y", "z"]), inner, max_size=3)), max_leaves=8)
_resource = st.fixed_dictionaries(
    {"provider": st.fixed_dictionaries({"name": st.sampled_from(["p", "q"])})},
    optional={"name": st.sampled_from(["", "a", "b"]), "template": st.dictionaries(st.sampled_from(["x", "y"]),
                                                                                  _json, max_size=2)})
_resources = st.lists(_resource, min_size=1, max_size=3)


def _handle(resources: list[dict], name: str = "h") -> dict:
    return {"metadata": {"name": name, "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": {"resources": resources}}


def _shuffled(value):
    if isinstance(value, dict):
        items = list(value.items())
        random.Random(len(items)).shuffle(items)
        return {k: _shuffled(v) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v) for v in value]
    return value


@given(_resources, _resources)
def test_equal_hash_implies_candidate_with_zero_on_criteria_1_to_3(claim_resources, handle_resources) -> None:
    handle = _handle(handle_resources)
    if template_hash(claim_resources) == template_hash(handle_resources):
        claim = {"metadata": {"name": "c"}, "spec": {"resources": claim_resources}}
        assert exclusion_reason(claim, handle, {}, NOW, claim_resources=claim_resources) is None
        assert _rank_key(claim_resources, handle)[:3] == (0, 0, 0)


@given(_resources)
def test_a_reordered_copy_has_the_same_hash_and_ranks_zero(resources) -> None:
    copy_ = _shuffled(copy.deepcopy(resources))
    assert template_hash(copy_) == template_hash(resources)
    assert _rank_key(resources, _handle(copy_))[:3] == (0, 0, 0)


@given(_resources, st.lists(_resources, min_size=1, max_size=4))
def test_ranking_with_the_hash_shortcut_equals_ranking_without(claim_resources, handle_lists) -> None:
    """rank_candidates skips the diffs of equal-hash handles; the order must be what the diffs would give."""
    claim = {"metadata": {"name": "c"}, "spec": {"resources": claim_resources}}
    handles = [_handle(r, f"h{i}") for i, r in enumerate(handle_lists)] + [_handle(copy.deepcopy(claim_resources),
                                                                                   "exact")]
    ranked = rank_candidates(claim, handles, {}, NOW, claim_resources=claim_resources)
    candidates = [h for h in handles if exclusion_reason(claim, h, {}, NOW, claim_resources=claim_resources) is None]
    slow = sorted(candidates, key=lambda h: _rank_key(claim_resources, h))
    assert [h["metadata"]["name"] for h in ranked] == [h["metadata"]["name"] for h in slow]
    assert _rank_key(claim_resources, ranked[0])[:3] == (0, 0, 0)  # an exact match always ranks first on 1-3

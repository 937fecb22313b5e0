"""Deep merge (docs/behaviour.md#conventions): overwrite and fill-only modes, list merge by index, inputs untouched."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolboy.utils.merge import deep_merge

OVERWRITE_CASES = [
    ({}, {}, {}),
    ({"a": 1}, {}, {"a": 1}),
    ({}, {"a": 1}, {"a": 1}),
    ({"a": 1}, {"a": 2}, {"a": 2}),
    ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}, {"a": {"b": 3, "c": 2}}),
    ({"a": {"b": {"c": 1}}}, {"a": {"b": {"d": 2}}}, {"a": {"b": {"c": 1, "d": 2}}}),
    ({"a": 1}, {"a": None}, {"a": None}),
    ({"a": None}, {"a": 1}, {"a": 1}),
    ({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}),
    ({"a": "x"}, {"a": {"b": 1}}, {"a": {"b": 1}}),
    ({"a": [1, 2]}, {"a": {"b": 1}}, {"a": {"b": 1}}),
    ({"a": [1, 2]}, {"a": [3]}, {"a": [3, 2]}),
    ({"a": [1]}, {"a": [1, 2, 3]}, {"a": [1, 2, 3]}),
    ({"a": [1, 2]}, {"a": [1, 2]}, {"a": [1, 2]}),
    ({"a": []}, {"a": [1]}, {"a": [1]}),
    ({"a": [1]}, {"a": []}, {"a": [1]}),
    ({"a": [{"x": 1}]}, {"a": [{"y": 2}]}, {"a": [{"x": 1, "y": 2}]}),
    ({"a": [{"x": 1}, {"x": 2}]}, {"a": [{"x": 9}]}, {"a": [{"x": 9}, {"x": 2}]}),
    ({"a": [{"x": 1}]}, {"a": [{"x": 1}, {"z": 3}]}, {"a": [{"x": 1}, {"z": 3}]}),
    ([1, 2], [3], [3, 2]),
    ([], [1, 2], [1, 2]),
    (1, 2, 2),
    ("a", {"b": 1}, {"b": 1}),
    (None, {"a": 1}, {"a": 1}),
    ({"a": 1}, None, None),
    ({"spec": {"count": 1, "image": "x"}}, {"spec": {"count": 2}}, {"spec": {"count": 2, "image": "x"}}),
    ({"a": True}, {"a": False}, {"a": False}),
    ({"a": 0}, {"a": ""}, {"a": ""}),
]

FILL_CASES = [
    ({}, {}, {}),
    ({"a": 1}, {"a": 2}, {"a": 1}),
    ({}, {"a": 2}, {"a": 2}),
    ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ({"a": None}, {"a": 2}, {"a": None}),
    ({"a": {"b": 1}}, {"a": {"b": 2, "c": 3}}, {"a": {"b": 1, "c": 3}}),
    ({"a": {"b": 1}}, {"a": "scalar"}, {"a": {"b": 1}}),
    ({"a": "scalar"}, {"a": {"b": 1}}, {"a": "scalar"}),
    ({"a": [1, 2]}, {"a": [9]}, {"a": [1, 2]}),
    ({"a": [1]}, {"a": [9, 8]}, {"a": [1, 8]}),
    ({"a": [{"x": 1}]}, {"a": [{"x": 2, "y": 3}]}, {"a": [{"x": 1, "y": 3}]}),
    ({"a": []}, {"a": [1, 2]}, {"a": [1, 2]}),
    ({"a": False}, {"a": True}, {"a": False}),
    ({"a": 0}, {"a": 5}, {"a": 0}),
    ({"a": ""}, {"a": "x"}, {"a": ""}),
    (1, 2, 1),
    (
        {"spec": {"size": "small"}},
        {"spec": {"size": "large", "region": "eu"}},
        {"spec": {"size": "small", "region": "eu"}},
    ),
]


@pytest.mark.parametrize(("base", "update", "expected"), OVERWRITE_CASES)
def test_overwrite(base, update, expected):
    assert deep_merge(base, update) == expected
    assert deep_merge(base, update, overwrite=True) == expected


@pytest.mark.parametrize(("base", "update", "expected"), FILL_CASES)
def test_fill_only(base, update, expected):
    assert deep_merge(base, update, overwrite=False) == expected


@pytest.mark.parametrize(("base", "update", "expected"), OVERWRITE_CASES + FILL_CASES)
def test_inputs_not_mutated(base, update, expected):
    base_copy, update_copy = copy.deepcopy(base), copy.deepcopy(update)
    deep_merge(base, update)
    deep_merge(base, update, overwrite=False)
    assert base == base_copy
    assert update == update_copy


def test_result_shares_no_containers():
    base = {"a": {"b": [1]}, "keep": {"x": [1]}}
    update = {"a": {"c": {"d": 1}}, "new": [{"y": 1}]}
    merged = deep_merge(base, update)
    merged["a"]["b"].append(2)
    merged["a"]["c"]["d"] = 2
    merged["keep"]["x"].append(2)
    merged["new"][0]["y"] = 2
    assert base == {"a": {"b": [1]}, "keep": {"x": [1]}}
    assert update == {"a": {"c": {"d": 1}}, "new": [{"y": 1}]}


def test_missing_list_elements_are_appended_once_correct_behaviour():
    # Upstream appended the whole update list, so merging twice grew the list every time.
    base = {"ports": [{"port": 80}]}
    update = {"ports": [{"port": 80}, {"port": 443}]}
    once = deep_merge(base, update)
    assert once == {"ports": [{"port": 80}, {"port": 443}]}
    assert deep_merge(once, update) == once


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_docs = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=20,
)


@given(json_docs, json_docs)
def test_overwrite_idempotent(a, b):
    merged = deep_merge(a, b)
    assert deep_merge(merged, b) == merged


@given(json_docs, json_docs)
def test_fill_only_idempotent(a, b):
    merged = deep_merge(a, b, overwrite=False)
    assert deep_merge(merged, b, overwrite=False) == merged


@given(json_docs)
def test_merge_with_self_is_identity(a):
    assert deep_merge(a, a) == a
    assert deep_merge(a, a, overwrite=False) == a


@given(st.dictionaries(st.text(max_size=3), json_docs, max_size=4), st.dictionaries(st.text(max_size=3), json_docs))
def test_overwrite_keys_union_and_update_wins_for_scalars(a, b):
    merged = deep_merge(a, b)
    assert set(merged) == set(a) | set(b)
    for key, value in b.items():
        if not isinstance(value, dict | list):
            assert merged[key] == value

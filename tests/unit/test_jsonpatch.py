"""JSON-patch diff, updateFilters and pointers (docs/behaviour.md#conventions, #binding, #handles)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devcluster.patch import json_patch
from poolboy.utils.jsonpatch import (
    PatchError,
    diff,
    escape_pointer,
    filter_ops,
    json_equal,
    path_matches,
    resolve_pointer,
    unescape_pointer,
)

D_ANNOTATIONS = "^/metadata/annotations/poolboy.gpte.redhat.com~1resource-.*$"

DIFF_CASES = [
    ({}, {}, []),
    ({"a": 1}, {"a": 1}, []),
    ({"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}]),
    ({"a": 1}, {}, [{"op": "remove", "path": "/a"}]),
    ({}, {"a": 1}, [{"op": "add", "path": "/a", "value": 1}]),
    (
        {"a": 1, "b": 2},
        {"b": 3, "c": 4},
        [
            {"op": "remove", "path": "/a"},
            {"op": "replace", "path": "/b", "value": 3},
            {"op": "add", "path": "/c", "value": 4},
        ],
    ),
    ({"a": {"b": 1}}, {"a": {"b": 2}}, [{"op": "replace", "path": "/a/b", "value": 2}]),
    ({"a": {"b": 1}}, {"a": {"b": 1, "c": {"d": 1}}}, [{"op": "add", "path": "/a/c", "value": {"d": 1}}]),
    ({"a": {"b": 1}}, {"a": [1]}, [{"op": "replace", "path": "/a", "value": [1]}]),
    ({"a": [1]}, {"a": {"0": 1}}, [{"op": "replace", "path": "/a", "value": {"0": 1}}]),
    ({"a": 1}, {"a": None}, [{"op": "replace", "path": "/a", "value": None}]),
    ({"a": None}, {"a": None}, []),
    ({"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}]),
    ({"a": 0}, {"a": False}, [{"op": "replace", "path": "/a", "value": False}]),
    ({"a": 1}, {"a": 1.0}, []),
    ({"a": "1"}, {"a": 1}, [{"op": "replace", "path": "/a", "value": 1}]),
    ({"a": [1, 2, 3]}, {"a": [1, 2, 3]}, []),
    ({"a": [1, 2, 3]}, {"a": [1, 5, 3]}, [{"op": "replace", "path": "/a/1", "value": 5}]),
    ({"a": [1, 2, 3]}, {"a": [1]}, [{"op": "remove", "path": "/a/2"}, {"op": "remove", "path": "/a/1"}]),
    (
        {"a": [1]},
        {"a": [1, 2, 3]},
        [{"op": "add", "path": "/a/1", "value": 2}, {"op": "add", "path": "/a/2", "value": 3}],
    ),
    ({"a": [1, 2]}, {"a": [3]}, [{"op": "replace", "path": "/a/0", "value": 3}, {"op": "remove", "path": "/a/1"}]),
    ({"a": [{"x": 1}]}, {"a": [{"x": 1, "y": 2}]}, [{"op": "add", "path": "/a/0/y", "value": 2}]),
    ({"a": []}, {"a": [{"x": 1}]}, [{"op": "add", "path": "/a/0", "value": {"x": 1}}]),
    ({"a/b": 1}, {"a/b": 2}, [{"op": "replace", "path": "/a~1b", "value": 2}]),
    ({"a~b": 1}, {}, [{"op": "remove", "path": "/a~0b"}]),
    ({}, {"~/": 1}, [{"op": "add", "path": "/~0~1", "value": 1}]),
    ({"": 1}, {"": 2}, [{"op": "replace", "path": "/", "value": 2}]),
    (1, 2, [{"op": "replace", "path": "", "value": 2}]),
    ({"a": 1}, [1], [{"op": "replace", "path": "", "value": [1]}]),
    ([1, 2], [], [{"op": "remove", "path": "/1"}, {"op": "remove", "path": "/0"}]),
    (
        {"metadata": {"annotations": {"poolboy.gpte.redhat.com/resource-handle-uid": "old"}}},
        {"metadata": {"annotations": {"poolboy.gpte.redhat.com/resource-handle-uid": "new"}}},
        [
            {
                "op": "replace",
                "path": "/metadata/annotations/poolboy.gpte.redhat.com~1resource-handle-uid",
                "value": "new",
            }
        ],
    ),
    (
        {"b": 1, "a": 1},
        {"c": 1, "a": 2, "d": 1},
        [
            {"op": "remove", "path": "/b"},
            {"op": "replace", "path": "/a", "value": 2},
            {"op": "add", "path": "/c", "value": 1},
            {"op": "add", "path": "/d", "value": 1},
        ],
    ),
]


def _patched(source, target):
    """``diff(source, target)`` applied to ``source`` by devcluster's JSON Patch, as the API server applies it: under
    a key, because the server patches objects only (a scalar root cannot be replaced)."""
    return json_patch({"d": source}, diff({"d": source}, {"d": target}))["d"]


@pytest.mark.parametrize(("source", "target", "ops"), DIFF_CASES)
def test_diff(source, target, ops):
    assert diff(source, target) == ops


@pytest.mark.parametrize(("source", "target", "ops"), DIFF_CASES)
def test_diff_applies(source, target, ops):
    assert json_equal(_patched(source, target), target)


def test_diff_never_emits_move_or_copy_and_copies_values():
    target = {"a": {"deep": [1]}}
    ops = diff({}, target)
    ops[0]["value"]["deep"].append(2)
    assert target == {"a": {"deep": [1]}}
    assert all(op["op"] in ("add", "remove", "replace") for op in diff({"a": [1, 2], "b": 3}, {"b": [1, 2], "c": 3}))


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("a", "a"), ("a/b", "a~1b"), ("a~b", "a~0b"), ("~1", "~01"), ("/~", "~1~0"), ("", ""), ("x.y/z", "x.y~1z")],
)
def test_pointer_escaping(raw, escaped):
    assert escape_pointer(raw) == escaped
    assert unescape_pointer(escaped) == raw


DOC = {"a": {"b": [10, {"c": "x"}]}, "k/e~y": 1, "": "empty", "n": None}


@pytest.mark.parametrize(
    ("pointer", "value"),
    [
        ("", DOC),
        ("/a", DOC["a"]),
        ("/a/b/0", 10),
        ("/a/b/1/c", "x"),
        ("/k~1e~0y", 1),
        ("/", "empty"),
        ("/n", None),
    ],
)
def test_resolve_pointer(pointer, value):
    assert resolve_pointer(DOC, pointer) == value


@pytest.mark.parametrize("pointer", ["/missing", "/a/b/2", "/a/b/01", "/a/b/-", "/a/b/x", "/a/b/0/deeper", "a", "/n/x"])
def test_resolve_pointer_missing(pointer):
    with pytest.raises(PatchError):
        resolve_pointer(DOC, pointer)
    assert resolve_pointer(DOC, pointer, None) is None
    assert resolve_pointer(DOC, pointer, default="d") == "d"


# ----------------------------------------------------------------------------------------------- filter_ops

OPS = [
    {"op": "replace", "path": "/spec/count", "value": 2},
    {"op": "add", "path": "/spec/image", "value": "x"},
    {"op": "remove", "path": "/status"},
    {"op": "replace", "path": "/metadata/annotations/poolboy.gpte.redhat.com~1resource-handle-uid", "value": "u"},
    {"op": "add", "path": "/metadata/labels/app", "value": "a"},
]


def _paths(ops):
    return [op["path"] for op in ops]


@pytest.mark.parametrize(
    ("filters", "always", "kept"),
    [
        (None, (), []),
        ([], (), []),
        (None, [D_ANNOTATIONS], ["/metadata/annotations/poolboy.gpte.redhat.com~1resource-handle-uid"]),
        ([{"pathMatch": "/spec/.*"}], (), ["/spec/count", "/spec/image"]),
        ([{"pathMatch": "/spec/.*", "allowedOps": ["replace"]}], (), ["/spec/count"]),
        ([{"pathMatch": "/spec/.*", "allowedOps": []}], (), []),
        ([{"pathMatch": "/spec"}], (), []),  # anchored at the end: /spec does not match /spec/count
        ([{"pathMatch": "spec/.*"}], (), []),  # anchored at the start
        ([{"pathMatch": ".*"}], (), _paths(OPS)),
        ([{"pathMatch": ".*", "allowedOps": ["add", "replace"]}], (), _paths([OPS[0], OPS[1], OPS[3], OPS[4]])),
        (
            [{"pathMatch": "/spec/count", "allowedOps": ["add"]}, {"pathMatch": "/spec/.*"}],
            (),
            ["/spec/image"],  # the first matching filter decides, even when it refuses
        ),
        (
            [{"pathMatch": "/spec/.*"}, {"pathMatch": "/spec/count", "allowedOps": ["add"]}],
            (),
            ["/spec/count", "/spec/image"],
        ),
        ([{"pathMatch": "/status"}], (), ["/status"]),
        ([{"pathMatch": "/status", "allowedOps": ["add", "replace"]}], (), []),
        (
            [{"pathMatch": "/metadata/.*", "allowedOps": ["add"]}],
            [D_ANNOTATIONS],
            ["/metadata/labels/app"],  # provider filter decides first; implicit filter only comes last
        ),
        ([{"pathMatch": "/spec/count|/status"}], (), ["/spec/count", "/status"]),  # alternation stays anchored
        ([{"pathMatch": "^/spec/count$"}], (), ["/spec/count"]),
        ([{"allowedOps": ["add"]}], (), []),  # a filter without pathMatch is ignored
    ],
)
def test_filter_ops(filters, always, kept):
    assert _paths(filter_ops(OPS, filters, always)) == kept


def test_filter_ops_invalid_regex_is_value_error():
    with pytest.raises(ValueError, match="invalid path regex"):
        filter_ops(OPS, [{"pathMatch": "/spec/("}])


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("/spec/.*", "/spec/x", True),
        ("/spec/.*", "/spec", False),
        ("/spec", "/spec/x", False),
        ("/spec", "/specs", False),
        ("/spec/x|/y", "/spec/xz", False),
        ("/metadata/annotations/a~1b", "/metadata/annotations/a~1b", True),
        (".*", "", True),
    ],
)
def test_path_matches(pattern, path, matches):
    assert path_matches(pattern, path) is matches


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (None, None, True),
        ({"a": [1]}, {"a": [1]}, True),
        ({"a": [True]}, {"a": [1]}, False),
        ([1, 2], [1], False),
        ("1", 1, False),
        ({"a": 1}, [1], False),
    ],
)
def test_json_equal(a, b, equal):
    assert json_equal(a, b) is equal


json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4)
)
json_docs = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(alphabet="ab/~0", max_size=3), children, max_size=4)
    ),
    max_leaves=25,
)


@given(json_docs, json_docs)
def test_apply_diff_round_trip(a, b):
    assert json_equal(_patched(a, b), b)


@given(json_docs)
def test_diff_of_equal_documents_is_empty(a):
    assert diff(a, copy.deepcopy(a)) == []


@given(json_docs, json_docs)
def test_diff_ops_are_leaf_level_add_remove_replace(a, b):
    for op in diff(a, b):
        assert op["op"] in ("add", "remove", "replace")
        assert ("value" in op) is (op["op"] != "remove")

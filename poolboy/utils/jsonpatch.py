"""JSON-patch diff, ``updateFilters`` and RFC 6902 apply (docs/behaviour.md#json-patch-diff, #binding, #handles).

Why our own diff: the diff is part of the API. Template matching (docs/behaviour.md#binding) counts and filters its ops,
and
``updateFilters`` (docs/behaviour.md#handles) decide per op, so it must be the leaf-level, index-by-index
add/remove/replace diff the
spec describes — never move/copy, never a "smart" list diff. Paths are RFC 6901 JSON pointers.

Op order of ``diff(source, target)``:

1. for maps, keys of ``source`` in their order: ``replace`` changed scalars and type changes, recurse into
   map/map and list/list, ``remove`` keys missing from ``target``; then keys only in ``target``, in target order,
   as ``add``;
2. for lists, index by index as above, then surplus ``source`` indexes removed from the highest down, then
   the extra ``target`` items ``add``-ed at their index.

So ``apply(source, diff(source, target)) == target`` always holds. Equality is JSON equality: ``True`` differs from
``1`` (Python says they are equal), while ``1 == 1.0``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = [
    "PatchError",
    "apply",
    "diff",
    "escape_pointer",
    "filter_ops",
    "json_equal",
    "resolve_pointer",
    "unescape_pointer",
]

ALL_OPS = ("add", "remove", "replace")


class PatchError(ValueError):
    """A JSON patch or pointer could not be applied/resolved (bad path, failed ``test``, malformed op)."""


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


# ---------------------------------------------------------------------------------------------------- pointers


def escape_pointer(token: str) -> str:
    """Escape one reference token (RFC 6901): ``~`` → ``~0`` then ``/`` → ``~1``."""
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape_pointer(token: str) -> str:
    """Undo :func:`escape_pointer` (``~1`` → ``/`` first, then ``~0`` → ``~``, as RFC 6901 requires)."""
    return token.replace("~1", "/").replace("~0", "~")


def _split(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}: must be empty or start with '/'")
    return [unescape_pointer(token) for token in pointer[1:].split("/")]


def _list_index(token: str, length: int, pointer: str, allow_end: bool = False) -> int:
    if allow_end and token == "-":
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"invalid list index {token!r} in JSON pointer {pointer!r}")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PatchError(f"list index {index} out of range in JSON pointer {pointer!r}")
    return index


def _child(node: Any, token: str, pointer: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"JSON pointer {pointer!r}: key {token!r} not found")
        return node[token]
    if isinstance(node, list):
        return node[_list_index(token, len(node), pointer)]
    raise PatchError(f"JSON pointer {pointer!r}: cannot descend into {type(node).__name__}")


def resolve_pointer(document: Any, pointer: str, default: Any = _MISSING) -> Any:
    """The value at ``pointer`` in ``document``; ``default`` when the path is missing (else ``PatchError``).

    Used for linked provider ``templateVars`` (``from`` is a pointer into the linked resource's state).
    """
    try:
        node = document
        for token in _split(pointer):
            node = _child(node, token, pointer)
        return node
    except PatchError:
        if default is _MISSING:
            raise
        return default


# ---------------------------------------------------------------------------------------------------- diff


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: like ``==`` but booleans are never equal to numbers, recursively."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return a == b and (type(a) is type(b) or (isinstance(a, int | float) and isinstance(b, int | float)))


def diff(source: Any, target: Any) -> list[dict]:
    """Leaf-level add/remove/replace ops turning ``source`` into ``target`` (order: see module docstring)."""
    ops: list[dict] = []
    _diff_into(source, target, "", ops)
    return ops


def _diff_into(source: Any, target: Any, path: str, ops: list[dict]) -> None:
    if isinstance(source, dict) and isinstance(target, dict):
        _diff_dicts(source, target, path, ops)
    elif isinstance(source, list) and isinstance(target, list):
        _diff_lists(source, target, path, ops)
    elif not json_equal(source, target):
        ops.append({"op": "replace", "path": path, "value": copy.deepcopy(target)})


def _diff_dicts(source: dict, target: dict, path: str, ops: list[dict]) -> None:
    for key, value in source.items():
        child = f"{path}/{escape_pointer(key)}"
        if key in target:
            _diff_into(value, target[key], child, ops)
        else:
            ops.append({"op": "remove", "path": child})
    for key, value in target.items():
        if key not in source:
            ops.append({"op": "add", "path": f"{path}/{escape_pointer(key)}", "value": copy.deepcopy(value)})


def _diff_lists(source: list, target: list, path: str, ops: list[dict]) -> None:
    common = min(len(source), len(target))
    for index in range(common):
        _diff_into(source[index], target[index], f"{path}/{index}", ops)
    for index in range(len(source) - 1, common - 1, -1):
        ops.append({"op": "remove", "path": f"{path}/{index}"})
    for index in range(common, len(target)):
        ops.append({"op": "add", "path": f"{path}/{index}", "value": copy.deepcopy(target[index])})


# ---------------------------------------------------------------------------------------------------- filters


@lru_cache(maxsize=1024)
def _anchored(pattern: str) -> re.Pattern[str]:
    """Compile a path regex anchored at both ends (``re.match`` anchors the start, ``$`` the end)."""
    try:
        return re.compile("(?:" + pattern + ")$")
    except re.error as error:
        raise ValueError(f"invalid path regex {pattern!r}: {error}") from None


def path_matches(pattern: str, path: str) -> bool:
    """Whether the regex ``pattern`` fully matches the JSON-pointer ``path`` (docs/behaviour.md#regex-paths)."""
    return _anchored(pattern).match(path) is not None


def filter_ops(
    ops: Iterable[dict], update_filters: list[dict] | None, always_allowed: Iterable[str] = ()
) -> list[dict]:
    """Keep the ops that ``updateFilters`` allow (docs/behaviour.md#handles).

    For each op the FIRST filter whose ``pathMatch`` fully matches the op's path decides: the op is kept iff its
    ``op`` is in that filter's ``allowedOps`` (every op when ``allowedOps`` is omitted). Ops that no filter
    matches are dropped. ``always_allowed`` regexes act as implicit last filters allowing every op.
    Raises ``ValueError`` for an invalid ``pathMatch`` regex.
    """
    filters = [f for f in (update_filters or []) if isinstance(f, dict) and f.get("pathMatch") is not None]
    filters += [{"pathMatch": pattern} for pattern in always_allowed]
    kept = []
    for op in ops:
        for update_filter in filters:
            if path_matches(str(update_filter["pathMatch"]), op["path"]):
                allowed = update_filter.get("allowedOps")
                if allowed is None or op["op"] in allowed:
                    kept.append(op)
                break
    return kept


# ---------------------------------------------------------------------------------------------------- apply


def apply(document: Any, ops: Iterable[dict]) -> Any:
    """Apply RFC 6902 ops (add/remove/replace/test/move/copy) to a copy of ``document``; raise ``PatchError``.

    ``test`` follows the API server: a missing member of an existing object tests equal to ``null``. Otherwise this
    is stricter than the server (which, e.g., lets ``replace`` add a missing member): it checks patches we build.
    """
    result = copy.deepcopy(document)
    for op in ops:
        result = _apply_one(result, op)
    return result


def _require(op: dict, field: str) -> Any:
    if field not in op:
        raise PatchError(f"patch operation {op!r} lacks {field!r}")
    return op[field]


def _apply_one(document: Any, op: dict) -> Any:
    if not isinstance(op, dict):
        raise PatchError(f"patch operation {op!r} is not an object")
    kind = _require(op, "op")
    path = _require(op, "path")
    if kind == "add":
        return _add(document, path, copy.deepcopy(_require(op, "value")))
    if kind == "remove":
        return _remove(document, path)[0]
    if kind == "replace":
        return _replace(document, path, copy.deepcopy(_require(op, "value")))
    if kind == "test":
        actual = _tested(document, path)
        if not json_equal(actual, _require(op, "value")):
            raise PatchError(f"test failed at {path!r}: expected {op['value']!r}, found {actual!r}")
        return document
    if kind == "move":
        source = _require(op, "from")
        if path != source and path.startswith(source + "/"):
            raise PatchError(f"cannot move {source!r} into its own child {path!r}")
        document, value = _remove(document, source)
        return _add(document, path, value)
    if kind == "copy":
        value = copy.deepcopy(resolve_pointer(document, _require(op, "from")))
        return _add(document, path, value)
    raise PatchError(f"unknown patch operation {kind!r}")


def _tested(document: Any, path: str) -> Any:
    """The value a ``test`` op compares. As in kube-apiserver (evanphx/json-patch), a member missing from an
    existing object reads as ``null``, so ``test`` of ``null`` guards "still absent"; a missing parent fails."""
    if path == "":
        return document
    parent, token = _parent(document, path)
    if isinstance(parent, dict):
        return parent.get(token)
    return _child(parent, token, path)


def _parent(document: Any, path: str) -> tuple[Any, str]:
    tokens = _split(path)
    node = document
    for token in tokens[:-1]:
        node = _child(node, token, path)
    return node, tokens[-1]


def _add(document: Any, path: str, value: Any) -> Any:
    if path == "":
        return value
    parent, token = _parent(document, path)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(token, len(parent), path, allow_end=True), value)
    else:
        raise PatchError(f"cannot add at {path!r}: parent is {type(parent).__name__}")
    return document


def _replace(document: Any, path: str, value: Any) -> Any:
    if path == "":
        return value
    parent, token = _parent(document, path)
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"cannot replace {path!r}: key {token!r} not found")
        parent[token] = value
    elif isinstance(parent, list):
        parent[_list_index(token, len(parent), path)] = value
    else:
        raise PatchError(f"cannot replace {path!r}: parent is {type(parent).__name__}")
    return document


def _remove(document: Any, path: str) -> tuple[Any, Any]:
    if path == "":
        raise PatchError("cannot remove the whole document")
    parent, token = _parent(document, path)
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"cannot remove {path!r}: key {token!r} not found")
        return document, parent.pop(token)
    if isinstance(parent, list):
        return document, parent.pop(_list_index(token, len(parent), path))
    raise PatchError(f"cannot remove {path!r}: parent is {type(parent).__name__}")

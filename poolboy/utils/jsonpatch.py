"""JSON-patch diff, ``updateFilters`` and JSON pointers (docs/behaviour.md#json-patch-diff, #binding, #handles).

Why our own diff: the diff is part of the API. Template matching (docs/behaviour.md#binding) counts and filters its
ops, and ``updateFilters`` (docs/behaviour.md#handles) decide per op, so it must be the leaf-level, index-by-index
add/remove/replace diff docs/behaviour.md#json-patch-diff describes — never move/copy, never a "smart" list diff.
Paths are RFC 6901 JSON pointers.

Op order of ``diff(source, target)``:

1. for maps, keys of ``source`` in their order: ``replace`` changed scalars and type changes, recurse into
   map/map and list/list, ``remove`` keys missing from ``target``; then keys only in ``target``, in target order,
   as ``add``;
2. for lists, index by index as above, then surplus ``source`` indexes removed from the highest down, then
   the extra ``target`` items ``add``-ed at their index.

So applying ``diff(source, target)`` to ``source`` always gives ``target`` (the tests apply it with devcluster's
JSON Patch, the API server stand-in's, as the server would). Equality is JSON equality: ``True`` differs from
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

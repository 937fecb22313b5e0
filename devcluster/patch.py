"""Patch formats: RFC 7386 JSON merge patch, RFC 6902 JSON patch (as kube-apiserver reads it, see below), and
strategic merge (merge semantics with the ``$patch`` / ``$retainKeys`` / ``$setElementOrder`` directives stripped,
enough for kubectl on core kinds)."""

from __future__ import annotations

import copy
import re
from typing import Any

from poolboy.utils.merge import merge_patch  # RFC 7386, shared with the reconcilers' staged patches


class PatchError(Exception):
    """A patch that cannot be applied (422 in kube-apiserver)."""


class PatchFormatError(Exception):
    """A patch document that is not well formed (400 in kube-apiserver)."""


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Merge-patch semantics after dropping strategic-merge directives kubectl may send."""
    return merge_patch(target, _strip_directives(patch))


def _strip_directives(patch: Any) -> Any:
    if isinstance(patch, dict):
        if patch.get("$patch") == "delete":
            return None
        return {k: _strip_directives(v) for k, v in patch.items()
                if not k.startswith("$setElementOrder/") and k not in ("$patch", "$retainKeys")
                and not k.startswith("$deleteFromPrimitiveList/")}
    if isinstance(patch, list):
        return [_strip_directives(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    return patch


# --- RFC 6902 JSON patch, as kube-apiserver applies it --------------------------------------------------------
#
# kube-apiserver applies JSON patches with evanphx/json-patch (v4), whose reading of RFC 6902 differs in ways
# operators rely on. Upstream Poolboy (Kopf) initialises objects with ``test`` ops of value ``null`` on members
# that do not exist yet, which pass there. The rules below follow that library, not the RFC:
#
# * A path is split at every ``/`` and its first segment ignored; a path without ``/`` (or ``""`` for add,
#   remove, move and copy) names nothing. Every segment but the last must resolve to an object or an array
#   (``null``, a scalar, a missing key or a bad index → "doc is missing path").
# * Object members: a missing member reads as ``null``. ``test`` of ``null`` (or without a ``value``) on it
#   passes, ``replace`` of it adds it, ``copy`` from it copies ``null``; ``remove`` and ``move`` from it fail.
#   ``add`` (and ``replace``) without ``value`` set ``null``.
# * Array indexes are decimal integers with an optional sign and leading zeros; negative ones count from the
#   end (``-1`` is the last element, and for ``add`` the end, so it appends). ``-`` appends for ``add`` only.
# * ``test`` compares JSON texts: ``true`` never equals ``1``, and a number written with a fraction or an
#   exponent (``1.0``) never equals an integral value, which the server always writes as ``1``.
# * An unknown or missing ``op`` fails the patch (422), like any operation that does not apply; only a body that
#   is not a list of objects is malformed (400). A ``null`` body is an empty patch.

INT_PATTERN = re.compile(r"[+-]?[0-9]+")
INT64_MAX = 2 ** 63 - 1
_MISSING: Any = object()


def _decode_token(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _array_index(token: str) -> int:
    """``strconv.Atoi``: an optional sign, decimal digits (leading zeros allowed), within int64."""
    if not INT_PATTERN.fullmatch(token) or abs(int(token)) > INT64_MAX:
        raise PatchError(f'strconv.Atoi: parsing "{token}": invalid syntax')
    return int(token)


def _normalise(index: int, length: int) -> int:
    """A negative index counts from the end; out of range either way is an error."""
    if index < 0:
        if index < -length:
            raise PatchError(f"Unable to access invalid index: {index}: invalid index referenced")
        index += length
    if index >= length:
        raise PatchError(f"Unable to access invalid index: {index}: invalid index referenced")
    return index


def _get(container: Any, key: str) -> Any:
    """A member (``_MISSING`` when an object lacks it); an array index that does not resolve is an error."""
    if isinstance(container, dict):
        return container.get(key, _MISSING)
    return container[_normalise(_array_index(key), len(container))]


def _find(doc: Any, path: str) -> tuple[Any, str] | None:
    """The container holding the last segment of ``path`` and that segment, or None if a parent is missing."""
    segments = path.split("/")
    if len(segments) < 2:
        return None
    node = doc
    for raw_segment in segments[1:-1]:
        try:
            node = _get(node, _decode_token(raw_segment))
        except PatchError:
            return None
        if not isinstance(node, dict | list):
            return None
    return node, _decode_token(segments[-1])


def _insert(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    try:
        index = _array_index(key)
    except PatchError as error:
        raise PatchError(f"value was not a proper array index: '{key}': {error}") from None
    container.insert(_normalise(index, len(container) + 1), value)  # one past the end is an append


def _delete(container: Any, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise PatchError(f"Unable to remove nonexistent key: {key}: missing value")
        del container[key]
        return
    index = _array_index(key)
    if index >= len(container):
        raise PatchError(f"Unable to access invalid index: {index}: invalid index referenced")
    container.pop(_normalise(index, len(container)))


def _path(op: dict[str, Any], field: str, kind: str) -> str:
    value = op.get(field)
    if not isinstance(value, str):
        raise PatchError(f"{kind} operation failed to decode {field}: missing value")
    return value


def _located(doc: Any, path: str, failure: str, quoted: bool = False) -> tuple[Any, str]:
    found = _find(doc, path)
    if found is None:
        shown = f'"{path}"' if quoted else path
        raise PatchError(f"{failure}: {shown}: missing value")
    return found


def _op_add(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "path", "add")
    container, key = _located(doc, path, "add operation does not apply: doc is missing path", quoted=True)
    try:
        _insert(container, key, copy.deepcopy(op.get("value")))
    except PatchError as error:
        raise PatchError(f"error in add for path: '{path}': {error}") from None
    return doc


def _op_remove(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "path", "remove")
    container, key = _located(doc, path, "remove operation does not apply: doc is missing path", quoted=True)
    try:
        _delete(container, key)
    except PatchError as error:
        raise PatchError(f"error in remove for path: '{path}': {error}") from None
    return doc


def _op_replace(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "path", "replace")
    value = copy.deepcopy(op.get("value"))
    if path == "":
        if not isinstance(value, dict | list):
            raise PatchError("replace operation value must be object or array")
        return value
    container, key = _located(doc, path, "replace operation does not apply: doc is missing path")
    try:
        _get(container, key)
    except PatchError:
        raise PatchError(f"replace operation does not apply: doc is missing key: {path}: missing value") from None
    if isinstance(container, dict):
        container[key] = value
    else:
        container[_normalise(int(key), len(container))] = value
    return doc


def _transfer(doc: Any, op: dict[str, Any], kind: str) -> Any:
    """``move`` and ``copy``: take the value at ``from`` (a move removes it there) and add it at ``path``."""
    moving = kind == "move"
    source = _path(op, "from", kind)
    container, key = _located(doc, source, f"{kind} operation does not apply: doc is missing from path")
    try:
        value = _get(container, key)
        if moving:
            _delete(container, key)
    except PatchError as error:
        where = f"error in move for path: '{key}'" if moving else f"error in copy for from: '{source}'"
        raise PatchError(f"{where}: {error}") from None
    path = _path(op, "path", kind)
    target, target_key = _located(doc, path, f"{kind} operation does not apply: doc is missing destination path")
    try:
        _insert(target, target_key, None if value is _MISSING else value if moving else copy.deepcopy(value))
    except PatchError as error:
        where = f"error in move for path: '{path}'" if moving else "error while adding value during copy"
        raise PatchError(f"{where}: {error}") from None
    return doc


def _op_test(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "path", "test")
    if path == "":
        actual = doc
    else:
        container, key = _located(doc, path, "test operation does not apply: is missing path")
        try:
            actual = _get(container, key)
        except PatchError as error:
            raise PatchError(f"error in test for path: '{path}': {error}") from None
    expected = op.get("value")
    if actual is _MISSING or actual is None:
        passed = expected is None
    else:
        passed = "value" in op and json_text_equal(actual, expected)
    if not passed:
        raise PatchError(f"testing value {path} failed: test failed")
    return doc


def json_text_equal(stored: Any, given: Any) -> bool:
    """Whether ``given`` (from a patch) equals ``stored`` the way the server compares their JSON texts."""
    if isinstance(stored, dict):
        return isinstance(given, dict) and stored.keys() == given.keys() and all(
            (stored[k] is None) == (given[k] is None) and (stored[k] is None or json_text_equal(stored[k], given[k]))
            for k in stored)
    if isinstance(stored, list):
        return isinstance(given, list) and len(stored) == len(given) and all(
            json_text_equal(a, b) for a, b in zip(stored, given, strict=True))
    if isinstance(stored, bool) or isinstance(given, bool):
        return stored is given
    if isinstance(stored, int | float) and isinstance(given, int | float):
        return stored == given and not (isinstance(given, float) and given.is_integer())
    return type(stored) is type(given) and stored == given


OPERATIONS: dict[str, Any] = {
    "add": _op_add, "remove": _op_remove, "replace": _op_replace, "test": _op_test,
    "move": lambda doc, op: _transfer(doc, op, "move"), "copy": lambda doc, op: _transfer(doc, op, "copy"),
}


def json_patch(target: Any, operations: Any) -> Any:
    """Apply a JSON patch to a deep copy of ``target``; any failing operation leaves ``target`` untouched."""
    if operations is None:
        return copy.deepcopy(target)
    if not isinstance(operations, list) or not all(op is None or isinstance(op, dict) for op in operations):
        raise PatchFormatError("json: cannot unmarshal the patch into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for op in operations:
        kind = (op or {}).get("op")
        handler = OPERATIONS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise PatchError(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
        doc = handler(doc, op)
    return doc

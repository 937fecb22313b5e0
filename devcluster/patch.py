"""Patch formats: RFC 7386 JSON merge patch, RFC 6902 JSON patch, and strategic merge (merge semantics with the
``$patch`` / ``$retainKeys`` / ``$setElementOrder`` directives stripped, enough for kubectl on core kinds)."""

from __future__ import annotations

import copy
from typing import Any


class PatchError(Exception):
    """A patch that cannot be applied (422 in kube-apiserver)."""


class PatchFormatError(Exception):
    """A patch document that is not well formed (400 in kube-apiserver)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


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


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchFormatError(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index: {token}")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError(f"array index out of bounds: {index}")
    return index


def _resolve(doc: Any, tokens: list[str]) -> Any:
    for token in tokens:
        if isinstance(doc, dict):
            if token not in doc:
                raise PatchError(f"doc is missing path: /{'/'.join(tokens)}")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(doc, token, False)]
        else:
            raise PatchError(f"doc is missing path: /{'/'.join(tokens)}")
    return doc


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise PatchError(f"add operation does not apply: doc is missing path: /{'/'.join(tokens)}")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise PatchError("cannot remove the document root")
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"remove operation does not apply: doc is missing key: /{'/'.join(tokens)}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, False))
    raise PatchError(f"remove operation does not apply: doc is missing path: /{'/'.join(tokens)}")


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 on a deep copy; any failing operation (including ``test``) leaves ``target`` untouched."""
    if not isinstance(operations, list):
        raise PatchFormatError("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchFormatError(f"invalid json patch operation: {op!r}")
        kind, tokens = op["op"], _pointer(op["path"])
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchFormatError(f"missing value for {kind} operation")
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            _resolve(doc, tokens)
            if tokens:
                _remove(doc, tokens)
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = copy.deepcopy(_resolve(doc, source))
            if kind == "move":
                _remove(doc, source)
            doc = _add(doc, tokens, value)
        elif kind == "test":
            if _resolve(doc, tokens) != op["value"]:
                raise PatchError(f"testing value /{'/'.join(tokens)} failed: test failed")
        else:
            raise PatchFormatError(f"unexpected json patch operation: {kind}")
    return doc

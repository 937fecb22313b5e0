"""Label and field selectors as kube-apiserver parses them (``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``,
``!key``; comma means AND), compiled once per request into a predicate over a stored object."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from devcluster.errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]

_SET_TERM = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=,()]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=,()]+)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside ``in (...)`` parentheses."""
    terms, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def _label_term(term: str) -> Predicate:
    match = _SET_TERM.match(term)
    if match:
        key = match["key"]
        values = {v.strip() for v in match["values"].split(",") if v.strip()}
        if match["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    match = _EQ_TERM.match(term)
    if match:
        key, value = match["key"], match["value"]
        if match["op"] == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    match = _EXISTS_TERM.match(term)
    if match:
        key = match["key"]
        if match["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: found '{term}', expected: in, notin, =, ==, !=, gt, lt")


def label_selector(text: str | None) -> Predicate | None:
    if not text or not text.strip():
        return None
    terms = [_label_term(t) for t in _split_terms(text)]

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(term(labels) for term in terms)

    return matches


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_selector(text: str | None, supported: Callable[[str], bool] = lambda path: True) -> Predicate | None:
    """``supported`` says which field labels the kind allows (others are 400, as in kube-apiserver)."""
    if not text or not text.strip():
        return None
    terms: list[Predicate] = []
    for term in _split_terms(text):
        match = _EQ_TERM.match(term)
        if not match:
            raise bad_request(f'invalid field selector: "{term}"')
        path, value, negate = match["key"], match["value"], match["op"] == "!="
        if not supported(path):
            raise bad_request(f'"{path}" is not a known field selector: only "metadata.name", '
                              f'"metadata.namespace"')
        terms.append(lambda obj, p=path, v=value, n=negate: (_field_value(obj, p) == v) != n)
    return lambda obj: all(term(obj) for term in terms)


def combine(*predicates: Predicate | None) -> Predicate | None:
    active = [p for p in predicates if p is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(p(obj) for p in active)


def single_name(text: str | None) -> str | None:
    """The name of a ``metadata.name=X`` field selector, so a watch/list can use the O(1) path."""
    if not text:
        return None
    terms = _split_terms(text)
    for term in terms:
        match = _EQ_TERM.match(term)
        if match and match["key"] == "metadata.name" and match["op"] != "!=":
            return match["value"]
    return None

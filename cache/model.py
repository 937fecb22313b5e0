"""What the shared read cache stores and how it answers a list: pure, no Redis.

The watcher writes every object it sees into the cache together with the *index memberships* computed here; the
workers read single objects by identity and answer label-selected lists from the same indexes. Keeping the rules
in one pure module means writer and reader can never disagree about which index an object belongs to.

Indexes (names, not Redis keys):

* ``kind|<apiVersion>|<kind>|<namespace>`` — every cached object of a kind in a namespace (``""`` = cluster-wide
  objects), and ``kind|<apiVersion>|<kind>|*`` across namespaces. Lists without a usable equality term read these.
* ``label|<apiVersion>|<kind>|<key>=<value>`` and ``label|<apiVersion>|<kind>|<key>`` — objects of a Poolboy kind
  carrying a label of the operator's domain (``D/...``), by value, and by presence for the labels the domain selects
  on by presence (``presence``; every one when not given). Only the domain's own labels are indexed: they are the
  only ones the reconcilers select on, and it keeps the index count bounded (each entry is a command per change).

What is stored is :func:`stored_form`: no ``managedFields`` and no last-applied annotation (bulk that no reader needs),
and no Secret values — a Secret is kept only as a marked stub (:data:`WITHHELD`) that every read treats as a miss, so
its values are read from the API when a run needs them and never rest in Redis.

Label selectors use the subset of the Kubernetes syntax the reconcilers need: ``k``, ``!k``, ``k=v``, ``k==v`` and
``k!=v`` joined by commas. Anything else (``in``, ``notin``) is :class:`Unanswerable`, and the reader asks the API.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from poolboy.domain import redaction

#: annotations that can be large and that no reader needs (the last-applied one also repeats a Secret's values)
BULKY_ANNOTATIONS = (redaction.LAST_APPLIED,)
#: the top-level key of a cached stub whose values were withheld (a Secret): a read of it is a miss
WITHHELD = "poolboy:withheld"


def stored_form(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` as the cache keeps it (``obj`` itself when nothing needs to go)."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    bulky = [key for key in BULKY_ANNOTATIONS if key in annotations]
    secret = redaction.is_secret(obj)
    if not (secret or bulky or "managedFields" in metadata):
        return obj
    slim_metadata = {key: value for key, value in metadata.items() if key != "managedFields"}
    if bulky:
        slim_metadata["annotations"] = {k: v for k, v in annotations.items() if k not in BULKY_ANNOTATIONS}
    if secret:
        return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": slim_metadata,
                WITHHELD: True}
    return {**obj, "metadata": slim_metadata}


def decode(doc: bytes | str | None) -> dict | None:
    """A cached document, or None when there is none or it is a withheld stub (the caller reads the API)."""
    if not doc:
        return None
    obj = orjson.loads(doc)
    return None if obj.get(WITHHELD) else obj


class Unanswerable(ValueError):
    """A selector the cache cannot answer from its indexes; the caller lists from the API instead."""


@dataclass(frozen=True)
class Term:
    key: str
    op: str  # "exists" | "!exists" | "=" | "!="
    value: str = ""

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "=":
            return labels.get(self.key) == self.value
        return labels.get(self.key) != self.value


@functools.lru_cache(maxsize=4096)
def parse_selector(selector: str | None) -> tuple[Term, ...]:
    """``"a=b,!c"`` -> terms; raises :class:`Unanswerable` for set-based syntax. Memoised: the same selectors come
    back run after run (a claim's first run lists its handles by the claim's labels), and terms are immutable."""
    terms: list[Term] = []
    for raw in (selector or "").split(","):
        part = raw.strip()
        if not part:
            continue
        if " in " in part or " notin " in part or "(" in part:
            raise Unanswerable(f"set-based selector {part!r}")
        if part.startswith("!"):
            terms.append(Term(part[1:].strip(), "!exists"))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            terms.append(Term(key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, value = part.replace("==", "=", 1).split("=", 1)
            terms.append(Term(key.strip(), "=", value.strip()))
        else:
            terms.append(Term(part, "exists"))
    return tuple(terms)


def selector_matches(terms: Iterable[Term], obj: Mapping[str, Any]) -> bool:
    labels = ((obj.get("metadata") or {}).get("labels")) or {}
    return all(term.matches(labels) for term in terms)


def kind_index(api_version: str, kind: str, namespace: str | None) -> str:
    return f"kind|{api_version}|{kind}|{namespace or ''}"


def label_index(api_version: str, kind: str, key: str, value: str | None = None) -> str:
    return f"label|{api_version}|{kind}|{key}" + (f"={value}" if value is not None else "")


def object_id(api_version: str, kind: str, namespace: str | None, name: str) -> str:
    """The cache identity of one object (apiVersion and kind, because managed resources of any kind are cached)."""
    return f"{api_version}|{kind}|{namespace or ''}|{name}"


def identity(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return object_id(obj.get("apiVersion") or "", obj.get("kind") or "", metadata.get("namespace"),
                     metadata.get("name") or "")


def indexes(obj: Mapping[str, Any], domain: str,
            extra: Callable[[Mapping[str, Any], str], list[str]] | None = None,
            presence: Collection[str] | None = None) -> list[str]:
    """Every index ``obj`` belongs to; Poolboy kinds (API group ``domain``) are also indexed by their D/ labels (by
    presence only those named in ``presence``, without the domain prefix; all when None), and by whatever ``extra``
    adds (the domain's binding indexes, :func:`poolboy.domain.binding.candidates.cache_entries`).

    Plain names are SET indexes; ``h:<name>\\t<value>`` is a HASH index (member -> value) and ``z:<name>\\t<score>``
    a sorted one."""
    api_version, kind = obj.get("apiVersion") or "", obj.get("kind") or ""
    metadata = obj.get("metadata") or {}
    result = [kind_index(api_version, kind, metadata.get("namespace"))]
    if api_version.split("/", 1)[0] != domain:
        return result
    prefix = domain + "/"
    for key, value in sorted((metadata.get("labels") or {}).items()):
        if key.startswith(prefix):
            if _presence_indexed(key, prefix, presence):
                result.append(label_index(api_version, kind, key))
            result.append(label_index(api_version, kind, key, str(value)))
    if extra is not None:
        result.extend(extra(obj, domain))
    return result


def _presence_indexed(key: str, prefix: str, presence: Collection[str] | None) -> bool:
    """Whether :func:`indexes` keeps a presence index for the domain label ``key`` (``prefix``: the domain's)."""
    return presence is None or key[len(prefix):] in presence


def plan_list(api_version: str, kind: str, namespace: str | None, terms: tuple[Term, ...],
              domain: str, presence: Collection[str] | None = None) -> list[str]:
    """The indexes to intersect for a list: the positive terms on indexed (domain) labels (a presence term only
    where :func:`indexes` keeps that label's presence index), else the kind index (``*``: every namespace, for a
    list across namespaces or of a cluster-scoped kind). The caller filters by the whole selector."""
    prefix = domain + "/"
    indexed = api_version.split("/", 1)[0] == domain
    chosen = [label_index(api_version, kind, t.key, t.value if t.op == "=" else None)
              for t in terms if indexed and t.key.startswith(prefix)
              and (t.op == "=" or (t.op == "exists" and _presence_indexed(t.key, prefix, presence)))]
    if chosen:
        return chosen
    return [kind_index(api_version, kind, namespace or "*")]


def in_namespace(obj: Mapping[str, Any], namespace: str | None) -> bool:
    return namespace is None or (obj.get("metadata") or {}).get("namespace") == namespace

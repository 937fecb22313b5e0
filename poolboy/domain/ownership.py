"""Which existing objects a handle may act on (docs/security.md#6-poolboy-acts-only-on-what-it-made).

Poolboy holds more rights than the users it serves, so it must never be pointed at an object it did not make: a claim
whose template renders the name of another application's object would otherwise get that object adopted after the
409, its contents mirrored into the claim's status and the object deleted with the claim. A handle therefore patches,
mirrors or deletes an object only when

* the object carries the handle's mark: the ``D/resource-handle-uid`` annotation of this handle, or the
  ``D/resource-handle-name`` and ``-namespace`` annotations of it (the marks upstream Poolboy leaves, so that a
  cluster taken over from upstream changes nothing; handle names are unique in the operator namespace), or
* an administrator named the object in the handle's own ``spec.resources[i].reference`` (users cannot write handles).

Pure: decisions over JSON documents, unit-tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the reason of the condition and Event that report an object Poolboy may not take over
CONFLICT = "ResourceConflict"


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def carries_mark(domain: str, handle: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` was made for ``handle``: its uid mark, or its name and namespace marks."""
    annotations = _annotations(obj)
    metadata = handle.get("metadata") or {}
    if metadata.get("uid") and annotations.get(f"{domain}/resource-handle-uid") == metadata["uid"]:
        return True
    return (annotations.get(f"{domain}/resource-handle-name") == metadata.get("name")
            and annotations.get(f"{domain}/resource-handle-namespace") == metadata.get("namespace")
            and bool(metadata.get("name")))


def same_object(reference: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> bool:
    """Whether ``reference`` (``{apiVersion, kind, name, namespace}``) names ``obj``."""
    if not reference:
        return False
    metadata = obj.get("metadata") or {}
    return (reference.get("apiVersion") == obj.get("apiVersion") and reference.get("kind") == obj.get("kind")
            and reference.get("name") == metadata.get("name")
            and (reference.get("namespace") or None) == (metadata.get("namespace") or None))


def named_by_administrator(handle: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Whether an entry of the handle's ``spec.resources`` references ``obj`` explicitly (the administrator's
    decision: only administrators write handles, and a claim's resources reach a handle without references)."""
    return any(isinstance(entry, Mapping) and same_object(entry.get("reference"), obj)
               for entry in (handle.get("spec") or {}).get("resources") or [])


def may_manage(domain: str, handle: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Whether the handle may patch, mirror or delete ``obj``."""
    return carries_mark(domain, handle, obj) or named_by_administrator(handle, obj)


def describe(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    where = f" in namespace {metadata['namespace']}" if metadata.get("namespace") else ""
    return f"{obj.get('kind')} {metadata.get('name')}{where}"


def conflict_message(handle: Mapping[str, Any], obj: Mapping[str, Any]) -> str:
    """Why an existing object is left alone, naming it and the mark it lacks."""
    marked = _owner_named(obj)
    whose = f"it belongs to {marked}" if marked else "it was not made by Poolboy"
    return (f"{describe(obj)} already exists and {whose}, not to ResourceHandle "
            f"{(handle.get('metadata') or {}).get('name')}: Poolboy neither adopts, shows nor deletes it. "
            f"Choose another name, or have an administrator reference it in the handle.")


def _owner_named(obj: Mapping[str, Any]) -> str | None:
    for key, value in _annotations(obj).items():
        if key.endswith("/resource-handle-name") and value:
            return f"ResourceHandle {value}"
    return None

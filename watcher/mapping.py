"""Watch event -> work keys. Pure: no API calls, no domain logic, just names.

Poolboy kinds map to their own key. A managed resource maps to the handle named by its annotations (spec §3.20);
that handle's reconcile then enqueues its claim.
"""

from __future__ import annotations

from poolboy import keys
from poolboy.settings import Settings


def poolboy_key(obj: dict, settings: Settings) -> str | None:
    """The key of a Poolboy object: claims in any namespace, the other kinds only in the operator namespace."""
    if obj.get("apiVersion") != settings.api_version:
        return None
    token = keys.TOKENS.get(obj.get("kind", ""))
    metadata = obj.get("metadata") or {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if token is None or not namespace or not name:
        return None
    if token != keys.CLAIM and namespace != settings.operator_namespace:
        return None
    return keys.make(token, namespace, name)


def managed_key(obj: dict, settings: Settings) -> str | None:
    """The key of the handle that manages ``obj``, or None when the event must be skipped (spec §3.20)."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not annotations:
        return None
    if settings.label("resource-handle-deleted") in annotations:
        return None
    name = annotations.get(settings.label("resource-handle-name"))
    if not name:
        return None
    namespace = annotations.get(settings.label("resource-handle-namespace")) or settings.operator_namespace
    return keys.make(keys.HANDLE, namespace, name)

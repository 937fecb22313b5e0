"""Watch event -> work keys. Pure: no API calls, no domain logic, just names.

Poolboy kinds map to their own key. A managed resource maps to the handle named by its annotations (spec §3.20);
that handle's reconcile then enqueues its claim. :func:`write_id` names the write behind an event, so that the
operator's own writes can be told apart (see :mod:`workers.own_writes`).
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


def managed_claim_key(obj: dict, settings: Settings) -> str | None:
    """The key of the claim a managed resource serves (``D/resource-claim-name/namespace`` annotations, set once
    its handle is bound): the claim mirrors the resource's state itself, so its change goes straight to the claim
    instead of through a handle run that would enqueue it whether or not the handle changed."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if settings.label("resource-handle-deleted") in annotations:
        return None
    name = annotations.get(settings.label("resource-claim-name"))
    namespace = annotations.get(settings.label("resource-claim-namespace"))
    return keys.make(keys.CLAIM, namespace, name) if name and namespace else None


def write_id(event_type: str, obj: dict) -> str | None:
    """``"<uid>/<resourceVersion>"`` of an event that may be the operator's own write, else None.

    MODIFIED and ADDED events of live objects qualify (an ADDED matches a recorded id only when it is the run's own
    create: an object that starts to match a watch carries the version of somebody else's write); never DELETED,
    never an object being deleted (its finalizer work must always run), never a listed object (a re-list must
    deliver everything).
    """
    if event_type not in ("MODIFIED", "ADDED"):
        return None
    metadata = obj.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return None
    uid, version = metadata.get("uid"), metadata.get("resourceVersion")
    return f"{uid}/{version}" if uid and version else None

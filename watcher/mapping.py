"""Watch event -> work keys, declared in one table (:data:`ROUTES`). Pure: no API calls, no domain logic, just names.

Like controller-runtime's handler map functions (``handler.EnqueueRequestsFromMapFunc``): each watched source has
the functions that turn one of its objects into the keys it wakes, and the watcher hands the event with those keys
to its intake (:mod:`watcher.delivery`; ``poolboy watcher``'s is :class:`engine.enqueue.EventIntake`: the cache
write, then each key to the work queue unless the event is the key's own write). Poolboy kinds map to their own key. A
managed resource maps to the handle named by its annotations (docs/behaviour.md#watching-managed-resources) and,
once bound, to its claim. Namespaces are watched only to fill the shared read cache and wake nothing. :func:`write_id`
names the write behind an event, so that the operator's own writes can be told apart (see :mod:`engine.own_writes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from poolboy import keys, kinds
from poolboy.observability import version_id
from poolboy.settings import Settings

#: one map function: the key an object's event wakes, or None
MapFunc = Callable[[dict, Settings], "str | None"]


def poolboy_key(obj: dict, settings: Settings) -> str | None:
    """The key of a Poolboy object: claims in any namespace, the other kinds only in the operator namespace."""
    if obj.get("apiVersion") != settings.api_version:
        return None
    token = keys.TOKENS.get(obj.get("kind", ""))
    metadata = obj.get("metadata") or {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if token is None or not namespace or not name:
        return None
    if not kinds.BY_TOKEN[token].all_namespaces and namespace != settings.operator_namespace:
        return None
    return keys.make(token, namespace, name)


def managed_key(obj: dict, settings: Settings) -> str | None:
    """The key of the handle that manages ``obj``, or None when the event must be skipped
    (docs/behaviour.md#watching-managed-resources)."""
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


@dataclass(frozen=True)
class Route:
    """One watched source and the keys its events wake.

    ``api_version`` None is the operator's own group (``Settings.api_version``); ``kind`` None stands for every kind
    of managed resource (their informers are started per kind as handles reference them, see
    :mod:`watcher.managed`)."""

    kind: str | None
    maps: tuple[MapFunc, ...]
    api_version: str | None = None
    #: watched in every namespace (claims), else only in the operator namespace
    all_namespaces: bool = False
    #: watched only to fill the shared read cache: started only when there is one
    cache_only: bool = False

    @property
    def poolboy(self) -> bool:
        """A kind of the operator's own group (its events also feed the watcher's metrics)."""
        return self.api_version is None and self.kind is not None

    def keys(self, obj: dict, settings: Settings) -> list[str]:
        """The keys one event of ``obj`` wakes, in order, without repeats."""
        found = (wake(obj, settings) for wake in self.maps)
        return list(dict.fromkeys(key for key in found if key is not None))


#: every Poolboy kind wakes its own key; claims are watched in every namespace
POOLBOY_ROUTES: tuple[Route, ...] = tuple(Route(kind.name, (poolboy_key,), all_namespaces=kind.all_namespaces)
                                          for kind in kinds.DECLARED)
#: a managed resource wakes the handle that manages it and the claim it serves
MANAGED = Route(None, (managed_key, managed_claim_key))
#: the requester's namespace (§3.14) is read from the cache and wakes nothing
CACHE_ONLY_ROUTES: tuple[Route, ...] = (Route("Namespace", (), api_version="v1", cache_only=True),)
#: the whole event path: watched source -> the keys it wakes
ROUTES: tuple[Route, ...] = (*POOLBOY_ROUTES, MANAGED, *CACHE_ONLY_ROUTES)


def write_id(event_type: str, obj: dict) -> str | None:
    """The write id (:func:`poolboy.observability.write_id`) of an event that may be the operator's own write, else
    None.

    MODIFIED and ADDED events of live objects qualify (an ADDED matches a recorded id only when it is the run's own
    create: an object that starts to match a watch carries the version of somebody else's write); never DELETED,
    never an object being deleted (its finalizer work must always run), never a listed object (a re-list must
    deliver everything).
    """
    if event_type not in ("MODIFIED", "ADDED"):
        return None
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return None
    return version_id(obj)

"""What a reconciler may ask of the API, as controller-runtime hands it to a reconciler: a :class:`Reader` (get and
list, with indexes) and a :class:`Writer` (the writes), :class:`Client` both at once; an :class:`EventRecorder`
for Events and a :class:`RESTMapper` for where a kind is served, each an object of its own.

Two classes implement :class:`Client`: :class:`poolboy.kube.KubeClient` (every call is a request) and the engine's
``cache.reader.CachedKubeClient`` (reads from the shared cache when it can answer, writes through to the API and then
into the cache). :class:`poolboy.context.Context` types its fields with these protocols, so the domain depends on what
it calls, not on which implementation it was handed, and a method a reconciler starts to use must be added here (and
so to every implementation) before a type checker accepts it. What only the engine asks of its own client (reading
ahead, being handed what it read elsewhere, the run's journal) is no part of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from poolboy.kube.discovery import ResourceInfo


#: ``(apiVersion, kind, name, namespace)``: one object, as :meth:`Reader.get` names it
ObjectRef = tuple[str, str, str, "str | None"]


@dataclass(frozen=True)
class IndexMatch:
    """The objects an index files under any of ``values``: controller-runtime's ``MatchingFields``, carrying the
    ``IndexField`` function (``values_of``) the index is kept with.

    A reader that keeps the index (the shared cache keeps the domain's) answers from it; any other reader lists and
    keeps the objects :meth:`matches` accepts. Both answer with the one function, so "which objects are in the
    index" has one definition, wherever it is answered.
    """

    #: the index's name (its Redis keys in the shared cache are ``<name>|<value>``)
    name: str
    values: tuple[str, ...]
    #: the values an object is filed under (none: it is not in the index)
    values_of: Callable[[Mapping[str, Any]], Iterable[str]]

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return any(value in self.values for value in self.values_of(obj))

    def names(self) -> list[str]:
        """``<name>|<value>`` for each value: the index entries to read."""
        return [f"{self.name}|{value}" for value in self.values]


@runtime_checkable
class Reader(Protocol):
    """Reads: one object by name, or every object of a kind (in a namespace, matching a label selector, filed under
    an index)."""

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict:
        """The object; :class:`poolboy.kube.NotFound` when there is none."""
        ...

    def get_or_none(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        ...

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, index: IndexMatch | None = None) -> list[dict]:
        """The objects matching every selector given, and ``index`` (:class:`IndexMatch`) when given."""
        ...


@runtime_checkable
class Writer(Protocol):
    """Writes, each with the precondition it carries."""

    def create(self, body: dict, *, dry_run: bool = False, strict: bool = False) -> dict:
        """POST; ``dry_run``: the object as the server would store it, nothing written; ``strict``: unknown or
        duplicate fields are refused (422), not dropped (``fieldValidation=Strict``, as kubectl asks)."""
        ...

    def replace(self, body: dict) -> dict:
        """PUT; ``metadata.resourceVersion`` in ``body`` makes it a compare-and-swap."""
        ...

    def replace_status(self, body: dict) -> dict:
        ...

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict, *,
                    resource_version: str | None = None, status: bool = False) -> dict:
        ...

    def patch_json(self, api_version: str, kind: str, name: str, namespace: str | None, ops: list[dict], *,
                   status: bool = False, strict: bool = False, dry_run: bool = False) -> dict:
        """JSON patch; ``strict`` and ``dry_run`` as for :meth:`create`."""
        ...

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str | None = None, uid: str | None = None,
               resource_version: str | None = None) -> dict | None:
        ...

    def delete_if_exists(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
                         propagation: str | None = None, uid: str | None = None,
                         resource_version: str | None = None) -> bool:
        ...


@runtime_checkable
class EventRecorder(Protocol):
    """Events about objects (controller-runtime's ``record.EventRecorder``): :meth:`emit` never raises, because an
    Event is worth less than the reconcile that reports it."""

    def emit(self, obj: dict, reason: str, message: str, *, type: str = "Normal", action: str | None = None) -> None:
        """A core/v1 Event about ``obj``; ``action`` defaults to ``reason``."""
        ...


@runtime_checkable
class RESTMapper(Protocol):
    """Where each kind is served (controller-runtime's ``meta.RESTMapper``, answered by discovery)."""

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        """Where ``kind`` is served; :class:`poolboy.kube.ApiMissing` when it is not."""
        ...


@runtime_checkable
class Client(Reader, Writer, Protocol):
    """A :class:`Reader` and a :class:`Writer`: what :attr:`poolboy.context.Context.kube` is."""

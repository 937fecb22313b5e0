"""What one reconcile runs with: the API (reads and writes, Events, discovery), the settings, the single ``now`` of
this run, and what the engine adds to make it cheaper (its handle index, its read-ahead)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from poolboy.kube.no_cluster import NoCluster
from poolboy.settings import Settings

if TYPE_CHECKING:  # the wrapper imports the kubernetes client; the domain only needs its type
    from poolboy.domain.binding.candidates import HandleIndex
    from poolboy.kube.interfaces import Client, EventRecorder, ObjectRef, Reader, RESTMapper

#: reads the objects named now, together, so that the run's gets of them are answered from that read
Prefetcher = Callable[["Iterable[ObjectRef]"], None]
#: the engine's side of :meth:`Context.will_wake`
Promiser = Callable[[str], None]


def utcnow() -> datetime:
    """Now in UTC, truncated to whole seconds (docs/behaviour.md#conventions: one now per reconcile, whole seconds)."""
    return datetime.now(UTC).replace(microsecond=0)


@dataclass(kw_only=True)
class Context:
    """Passed to every domain reconciler as ``reconcile(ctx, namespace, name) -> Result``; whoever runs the
    reconcile (the engine, a test, a benchmark) supplies every field.

    ``now`` is taken once when the context is made, so every value computed in one reconcile agrees
    (e.g. ``end - start == default`` exactly).
    """

    #: the API as a reader and a writer: :class:`poolboy.kube.KubeClient`, or the engine's cached client
    kube: Client
    #: Events about the objects the run handles (controller-runtime's EventRecorder)
    events: EventRecorder
    #: where each kind is served (controller-runtime's RESTMapper)
    mapper: RESTMapper
    settings: Settings
    now: datetime = field(default_factory=utcnow)
    #: unbound handles by binding scope, kept by the engine (None: binding lists candidates from the API)
    index: HandleIndex | None = None
    #: reads that go to the API server, never to a cache (controller-runtime's APIReader), for the few questions a
    #: cache that lags may answer wrongly; None: :attr:`kube` reads from the API already
    api: Reader | None = None
    #: the engine's read-ahead (see :meth:`prefetch`); None: every get is read when it is made
    prefetcher: Prefetcher | None = None
    #: the engine's promises of a wake at the run's end (see :meth:`will_wake`); None: nothing to promise
    promiser: Promiser | None = None

    @classmethod
    def without_cluster(cls, settings: Settings, why: str, promiser: Promiser | None = None) -> Context:
        """A context whose every API request raises :class:`~poolboy.kube.no_cluster.NoClusterError` saying ``why``
        (its Events are dropped): a process without a cluster runs with it, and code that must ask nothing of the
        API can be run with it. The engine's promises (:meth:`will_wake`) hold all the same."""
        absent = NoCluster(why)
        return cls(kube=absent, events=absent, mapper=absent, settings=settings, promiser=promiser)

    @property
    def api_reader(self) -> Reader:
        return self.api if self.api is not None else self.kube

    def prefetch(self, refs: Iterable[ObjectRef]) -> None:
        """The run is about to get these objects: let the engine read them now, together (one round trip to its
        cache instead of one per get). Only an optimisation: without a prefetcher nothing happens, and every get
        still goes through :attr:`kube`."""
        if self.prefetcher is not None:
            self.prefetcher(refs)

    def will_wake(self, key: str) -> None:
        """This run is about to write what ``key``'s reconciler reads (a claim binding or creating its handle, a
        handle creating or updating its claim's resource): the engine wakes ``key`` at the run's end, whatever its
        outcome, and holds the key's watch events until then, so that the write's event does not run the key while
        this run is still writing. Only an optimisation of how often the key runs: without an engine, nothing
        happens."""
        if self.promiser is not None:
            self.promiser(key)

    def label(self, suffix: str) -> str:
        return self.settings.label(suffix)

"""The watcher process: informers for the Poolboy kinds and for managed resources, behind a leader lease.

Every event — spec, metadata or status-only — goes to the cache and wakes each key its route names
(:data:`watcher.mapping.ROUTES`, the whole event path in one table); a (re)list hands over every key again, so a
restarted watcher loses nothing. The watcher holds no domain logic: what a key means is the workers' business.

Where events go is pluggable. ``poolboy watcher`` passes an :class:`Intake` (:class:`workers.intake.GateIntake`)
that writes the cache and hands every key to the gate in one Redis round trip per event (per batch of the events a
source queued up meanwhile: :mod:`watcher.delivery`), and leaves out the events of the operator's own writes
(:mod:`workers.own_writes`). Without one, the event goes to the ``cache`` writer and
each key to ``sink(key)``, so tests can record keys and ``--record-keys`` works without Redis.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol

from poolboy import keys
from poolboy.domain import pool_revision
from poolboy.domain.binding import WAITING_LABEL
from poolboy.kube import KubeClient
from poolboy.observability import labelled
from poolboy.settings import Settings
from poolboy.utils.backoff import Backoff
from watcher import mapping, metrics
from watcher.delivery import DeliveryQueue
from watcher.informer import Informer, ListCallback
from watcher.leader import LeaderElector
from watcher.managed import ManagedResources
from watcher.observed import ClaimTimings, PoolStats
from watcher.pool_flow import PoolFlow

if TYPE_CHECKING:
    from cache.writer import CacheWriter

log = logging.getLogger(__name__)

#: where keys go (the return value, e.g. ``Enqueuer.add``'s task id, is not used)
Sink = Callable[[str], object]


#: the keys one event wakes, each with the event's write id (:func:`watcher.mapping.write_id`, None: not a candidate
#: for an own write)
Wakes = list[tuple[str, "str | None"]]
#: one event on its way: (event type, object, the keys it wakes)
Event = tuple[str, dict, Wakes]


class Intake(Protocol):
    def deliver(self, event_type: str, obj: dict, wakes: Wakes) -> list[str]:
        """Write the event into the cache and hand each woken key to the gate; the gate's outcome per key
        (:data:`workers.gate.ADD_OUTCOMES`). Raises when Redis cannot be reached (the watcher retries the whole
        delivery, which is idempotent)."""
        ...

    def deliver_many(self, events: Sequence[Event]) -> list[list[str]]:
        """:meth:`deliver` for several events, in order, in one round trip; the outcomes per event."""
        ...


def default_identity() -> str:
    return f"{os.environ.get('HOSTNAME') or socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class Watcher:
    def __init__(self, settings: Settings, kube: KubeClient, sink: Sink, *, identity: str | None = None,
                 leader_election: bool = True, watch_timeout: int = 300,
                 intake: Intake | None = None, cache: CacheWriter | None = None) -> None:
        self.settings = settings
        self.cache = cache
        if cache is not None:
            cache.on_redis_lost = self.relist_all
        self.intake = intake
        self.kube = kube
        self.sink = sink
        self.identity = identity or default_identity()
        self.leader_election = leader_election
        self.watch_timeout = watch_timeout
        self.label_selector = f"!{settings.label('ignore')}"
        self._informers: list[Informer] = []
        self._managed: ManagedResources | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._elector: LeaderElector | None = None
        #: metrics derived from the objects seen (``poolboy watcher`` registers ``pool_stats`` as a collector)
        self.claim_timings = ClaimTimings()
        self.pool_stats = PoolStats(settings.label(WAITING_LABEL), settings.label(pool_revision.ANNOTATION))
        self.pool_flow = PoolFlow()
        #: events on their way to the intake, in batches, one queue per watched source so that a busy stream does
        #: not hold up another (:mod:`watcher.delivery`); running while watching
        self.deliveries: dict[mapping.Route, DeliveryQueue[Event]] = {
            route: DeliveryQueue(self._deliver_batch, name=f"event delivery ({route.kind or 'managed'})")
            for route in mapping.ROUTES} if intake is not None else {}
        metrics.DELIVERY_QUEUED.set_function(lambda: sum(queue.pending() for queue in self.deliveries.values()))

    # --- lifecycle -------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Block until :meth:`stop`: campaign for the lease (or just watch, without election)."""
        if not self.leader_election:
            self.start_watching()
            self._stop.wait()
            self.stop_watching()
            return
        self._elector = LeaderElector(
            self.kube, self.settings.operator_namespace, self.settings.watcher_lease_name, self.identity,
            lease_seconds=self.settings.watcher_lease_seconds,
            on_started=self.start_watching, on_stopped=self.stop_watching,
        )
        if self._stop.is_set():
            return
        self._elector.run()

    def stop(self) -> None:
        self._stop.set()
        if self._elector is not None:
            self._elector.stop()
        for queue in self.deliveries.values():
            queue.stop()

    @property
    def is_leader(self) -> bool:
        return self._elector.is_leader if self._elector is not None else bool(self._informers)

    @property
    def elector(self) -> LeaderElector | None:
        return self._elector

    def informers(self) -> list[Informer]:
        """Every running informer: the Poolboy kinds' and the managed resources' (for the health probes)."""
        with self._lock:
            informers, managed = list(self._informers), self._managed
        return informers + (managed.informers() if managed is not None else [])

    def poolboy_informers(self) -> list[Informer]:
        with self._lock:
            return list(self._informers)

    def start_watching(self) -> None:
        with self._lock:
            if self._informers:
                return
            if self.cache is not None:
                self.cache.start()
            for queue in self.deliveries.values():
                queue.start()
            self._managed = ManagedResources(self.kube, partial(self.on_event, mapping.MANAGED),
                                             watch_timeout=self.watch_timeout,
                                             informer_factory=partial(Informer,
                                                                      on_list=self._list_callback(mapping.MANAGED)))
            for route in mapping.ROUTES:
                if route.kind is None or (route.cache_only and self.cache is None):
                    continue  # managed kinds: started by ManagedResources as handles reference them
                self._informers.append(self._informer(route, self._list_callback(route)).start())
            metrics.INFORMERS.labels("poolboy").set(len(self._informers))
            metrics.LEADER.set(1)
        log.info("%s: watching", self.identity)

    def _informer(self, route: mapping.Route, on_list: ListCallback | None) -> Informer:
        """The informer of one route: Poolboy kinds skip objects labelled ``D/ignore``, in the operator namespace
        unless the route says every namespace."""
        assert route.kind is not None
        return Informer(
            kube=self.kube, api_version=route.api_version or self.settings.api_version, kind=route.kind,
            namespace=None if route.all_namespaces or not route.poolboy else self.settings.operator_namespace,
            label_selector=self.label_selector if route.poolboy else None, callback=partial(self.on_event, route),
            watch_timeout=self.watch_timeout, backoff=Backoff(), on_list=on_list,
        )

    def stop_watching(self) -> None:
        with self._lock:
            informers, self._informers = self._informers, []
            managed, self._managed = self._managed, None
            metrics.INFORMERS.labels("poolboy").set(0)
            metrics.LEADER.set(0)
            self.claim_timings.clear()  # a standby exports no pool gauges; the next leader re-lists everything
            self.pool_stats.clear()
            self.pool_flow.clear()
        for informer in informers:
            informer.stop()
        if managed is not None:
            managed.stop_all()
        for queue in self.deliveries.values():
            queue.clear()  # a standby hands nothing on: the next leader lists everything
        if self.cache is not None and informers:
            self.cache.stop()
        log.info("%s: stopped watching", self.identity)

    # --- events ----------------------------------------------------------------------------------------------

    def relist_all(self) -> None:
        """Every informer lists again (Redis lost the gate, the due-index and the cache): every key is re-added."""
        with self._lock:
            informers = list(self._informers)
            managed = self._managed
        for informer in informers + (managed.informers() if managed is not None else []):
            informer.request_relist()

    def on_event(self, route: mapping.Route, event_type: str, obj: dict) -> None:
        """One event of ``route``'s source: into the cache first (a run reads at least this version), then to the
        watcher's own bookkeeping, then each key the route wakes to the gate."""
        if route.poolboy:
            self._observe(event_type, obj)
        wakes: Wakes = [(key, mapping.write_id(event_type, obj)) for key in route.keys(obj, self.settings)]
        intake = self.intake
        queue = self.deliveries.get(route)
        if queue is not None and queue.running:
            queue.submit((event_type, obj, wakes))
            return
        if intake is not None:  # not watching (a test driving events by hand): at once, in the caller's thread
            self._retrying(lambda: _count(wakes, intake.deliver(event_type, obj, wakes)), _wakes_text(wakes))
            return
        if self.cache is not None:
            self.cache.on_event(event_type, obj)
        for key, _ in wakes:
            self._retrying(partial(self.sink, key), key)
        _count(wakes, ["added"] * len(wakes))

    def _deliver_batch(self, batch: list[Event]) -> None:
        """The delivery thread's work: the events that queued up, in one round trip, retried while Redis is away."""
        intake = self.intake
        assert intake is not None
        if not self._watching():
            return  # the lease was lost meanwhile: the next leader lists everything
        metrics.DELIVERY_BATCH.observe(len(batch))

        def deliver() -> None:
            for (_, _, wakes), outcomes in zip(batch, intake.deliver_many(batch), strict=True):
                _count(wakes, outcomes)

        self._retrying(deliver, f"{len(batch)} events" if len(batch) > 1 else _wakes_text(batch[0][2]))

    def _list_callback(self, route: mapping.Route) -> ListCallback | None:
        return partial(self._on_list, route) if self.cache is not None else None

    def _on_list(self, route: mapping.Route, informer: Informer, items: list) -> None:
        """A (re)list fills and prunes the cache once the events of its source queued before it are in
        (:meth:`DeliveryQueue.drain`): an older event delivered after the prune would put back an object the list
        no longer has."""
        assert self.cache is not None
        queue = self.deliveries.get(route)
        if queue is not None:
            queue.drain()
        self.cache.on_list(informer, items)

    def _observe(self, event_type: str, obj: dict) -> None:
        """Pool and claim metrics, and the managed kinds a handle references (started and stopped from here)."""
        self.pool_stats.on_event(event_type, obj)
        if obj.get("kind") == keys.KINDS[keys.CLAIM]:
            self.claim_timings.on_event(event_type, obj)
        if obj.get("kind") == keys.KINDS[keys.HANDLE]:
            self.pool_flow.on_event(event_type, obj)
            managed = self._managed
            if managed is not None:
                managed.on_handle_event(event_type, obj)

    def _retrying(self, deliver: Callable[[], object], what: str) -> None:
        """Deliver, retrying while it fails (e.g. Redis down): dropping it would lose the change.

        Blocking here stalls only this informer's stream; if that lasts, the API server ends the watch and the
        re-list afterwards delivers the current state anyway.
        """
        backoff = Backoff(base=0.1, cap=5.0)
        while True:
            try:
                deliver()
                return
            except Exception as error:
                metrics.SINK_ERRORS.inc()
                if self._stop.is_set() or not self._watching():
                    log.warning("dropping %s after a failed delivery while stopping: %s", what, error)
                    return
                delay = backoff.next_delay()
                log.warning("delivery of %s failed (%s); retrying in %.1fs", what, error, delay)
                self._stop.wait(delay)

    def _watching(self) -> bool:
        return bool(self._informers)


def _wakes_text(wakes: Wakes) -> str:
    return ", ".join(key for key, _ in wakes) or "an event that wakes no key"


#: outcomes of a delivered key that added no run: the key's own write, or deferred to the run going on
_SKIPPED = ("own-write", "deferred")


def _count(wakes: Wakes, outcomes: list[str]) -> None:
    for (key, _), outcome in zip(wakes, outcomes, strict=True):
        if outcome in _SKIPPED:
            labelled(metrics.SKIPPED, outcome).inc()
        else:
            labelled(metrics.KEYS, key.split("/", 1)[0]).inc()

"""The watcher process: informers for the Poolboy kinds and for managed resources, behind a leader lease.

Every event — spec, metadata or status-only — goes to the cache and wakes each key its route names
(:data:`watcher.mapping.ROUTES`, the whole event path in one table); a (re)list hands over every key again, so a
restarted watcher loses nothing. The watcher holds no domain logic: what a key means is the workers' business.

The informers' callback is :class:`watcher.delivery.EventDelivery`, the event path itself, which hands the events to
the watcher's intake: ``poolboy watcher`` gives :class:`engine.enqueue.EventIntake`, which writes the cache and hands
every key to the work queue in one Redis round trip per event (per batch of the events a source queued up meanwhile),
and leaves out the events of the operator's own writes (:mod:`engine.own_writes`). This module keeps the lifecycle: the
lease, which informers run, and the metrics derived from what they see.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from functools import partial
from typing import TYPE_CHECKING

from poolboy import keys
from poolboy.domain import pool_revision
from poolboy.domain.binding import WAITING_LABEL
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from poolboy.utils.backoff import Backoff
from watcher import mapping, metrics
from watcher.delivery import EventDelivery, Intake
from watcher.informer import Informer, ListCallback
from watcher.leader import LeaderElector
from watcher.managed import ManagedResources
from watcher.observed import ClaimTimings, PoolStats
from watcher.pool_flow import PoolFlow

if TYPE_CHECKING:
    from cache.writer import CacheWriter

log = logging.getLogger(__name__)


def default_identity() -> str:
    return f"{os.environ.get('HOSTNAME') or socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class Watcher:
    """``Watcher(settings, kube, intake, cache=writer).run()``: while it holds the lease, every event goes to
    ``intake``; ``cache`` is the read cache's writer, which every (re)list fills and prunes (None: no read cache)."""

    def __init__(self, settings: Settings, kube: KubeClient, intake: Intake, *, cache: CacheWriter | None = None,
                 identity: str | None = None, leader_election: bool = True, watch_timeout: int = 300) -> None:
        self.settings = settings
        self.cache = cache
        if cache is not None:
            cache.on_redis_lost = self.relist_all
        self.kube = kube
        self.identity = identity or default_identity()
        self.leader_election = leader_election
        self.watch_timeout = watch_timeout
        self.label_selector = f"!{settings.label('ignore')}"
        self._informers: list[Informer] = []
        #: set before the first informer starts and cleared when they stop: the events of an informer that lists
        #: while the others are still being started are delivered, not taken for a lost lease's
        self._delivering = False
        self._managed: ManagedResources | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._elector: LeaderElector | None = None
        #: metrics derived from the objects seen (``poolboy watcher`` registers ``pool_stats`` as a collector)
        self.claim_timings = ClaimTimings()
        self.pool_stats = PoolStats(settings.label(WAITING_LABEL), settings.label(pool_revision.ANNOTATION))
        self.pool_flow = PoolFlow()
        #: the event path: every informer's callback (:mod:`watcher.delivery`)
        self.events = EventDelivery(settings, intake=intake, cache=cache, observe=self._observe,
                                    watching=self._watching, stopping=self._stop)

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
        self.events.stop()

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
            self.events.start()
            self._delivering = True
            self._managed = ManagedResources(self.kube, partial(self.events.on_event, mapping.MANAGED),
                                             watch_timeout=self.watch_timeout,
                                             informer_factory=partial(Informer,
                                                                      on_list=self.events.list_callback(
                                                                          mapping.MANAGED)))
            for route in mapping.ROUTES:
                if route.kind is None or (route.cache_only and self.cache is None):
                    continue  # managed kinds: started by ManagedResources as handles reference them
                self._informers.append(self._informer(route, self.events.list_callback(route)).start())
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
            label_selector=self.label_selector if route.poolboy else None,
            callback=partial(self.events.on_event, route), watch_timeout=self.watch_timeout, backoff=Backoff(),
            on_list=on_list,
        )

    def stop_watching(self) -> None:
        with self._lock:
            informers, self._informers = self._informers, []
            self._delivering = False
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
        self.events.clear()  # a standby hands nothing on: the next leader lists everything
        if self.cache is not None and informers:
            self.cache.stop()
        log.info("%s: stopped watching", self.identity)

    # --- events ----------------------------------------------------------------------------------------------

    def relist_all(self) -> None:
        """Every informer lists again (Redis lost the work queue, the delaying queue and the cache): every key is
        re-added."""
        with self._lock:
            informers = list(self._informers)
            managed = self._managed
        for informer in informers + (managed.informers() if managed is not None else []):
            informer.request_relist()

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

    def _watching(self) -> bool:
        return self._delivering


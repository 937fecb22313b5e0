"""The watcher process: informers for the Poolboy kinds and for managed resources, behind a leader lease.

Every event — spec, metadata or status-only — becomes ``sink(key)`` for each key its route wakes
(:data:`watcher.mapping.ROUTES`, the whole event path in one table); a (re)list hands over every key again, so a
restarted watcher loses nothing. The watcher holds no domain logic: what a key means is the workers' business.
The sink is pluggable so tests can record keys; ``poolboy watcher`` passes the gate's ``Enqueuer.add`` itself.

One exception: with an ``own_writes`` checker (``poolboy watcher`` passes :class:`workers.own_writes.OwnWrites`),
a MODIFIED event that is the write of a run of the same key is not handed to the sink (see
:mod:`workers.own_writes`). If the check fails, the key goes to the sink as usual.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from poolboy import keys
from poolboy.domain import pool_revision
from poolboy.domain.binding import WAITING_LABEL
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from poolboy.utils.backoff import Backoff
from watcher import mapping, metrics
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


class OwnWriteCheck(Protocol):
    def check(self, key: str, ident: str) -> str:
        """"skip" (the key's own write), "deferred" (the key's running run decides) or "add"."""
        ...


def default_identity() -> str:
    return f"{os.environ.get('HOSTNAME') or socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class Watcher:
    def __init__(self, settings: Settings, kube: KubeClient, sink: Sink, *, identity: str | None = None,
                 leader_election: bool = True, watch_timeout: int = 300,
                 own_writes: OwnWriteCheck | None = None, cache: CacheWriter | None = None) -> None:
        self.settings = settings
        self.cache = cache
        if cache is not None:
            cache.on_redis_lost = self.relist_all
        self.own_writes = own_writes
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
            on_list = self.cache.on_list if self.cache is not None else None
            if self.cache is not None:
                self.cache.start()
            self._managed = ManagedResources(self.kube, partial(self.on_event, mapping.MANAGED),
                                             watch_timeout=self.watch_timeout,
                                             informer_factory=partial(Informer, on_list=on_list))
            for route in mapping.ROUTES:
                if route.kind is None or (route.cache_only and self.cache is None):
                    continue  # managed kinds: started by ManagedResources as handles reference them
                self._informers.append(self._informer(route, on_list).start())
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
        watcher's own bookkeeping, then each key the route wakes to the sink (unless it is the key's own write)."""
        if self.cache is not None:
            self.cache.on_event(event_type, obj)
        if route.poolboy:
            self._observe(event_type, obj)
        for key in route.keys(obj, self.settings):
            if not self._own_write(key, event_type, obj):
                self._emit(key)

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

    def _own_write(self, key: str, event_type: str, obj: dict) -> bool:
        """True when the event needs no ``sink(key)``: a run of ``key`` wrote it, or the running one will judge it.

        Any failure answers False: an extra run is cheap, a lost change is not.
        """
        if self.own_writes is None:
            return False
        ident = mapping.write_id(event_type, obj)
        if ident is None:
            return False
        try:
            verdict = self.own_writes.check(key, ident)
        except Exception as error:
            metrics.OWN_WRITE_CHECK_ERRORS.inc()
            log.warning("own-write check failed for %s (%s); adding the key", key, error)
            return False
        if verdict == "skip":
            metrics.SKIPPED.labels("own-write").inc()
            return True
        if verdict == "deferred":
            metrics.SKIPPED.labels("deferred").inc()
            return True
        return False

    def _emit(self, key: str) -> None:
        """Hand a key to the sink, retrying while it fails (e.g. Redis down): dropping it would lose the change.

        Blocking here stalls only this informer's stream; if that lasts, the API server ends the watch and the
        re-list afterwards delivers the current state anyway.
        """
        backoff = Backoff(base=0.1, cap=5.0)
        while True:
            try:
                self.sink(key)
                metrics.KEYS.labels(key.split("/", 1)[0]).inc()
                return
            except Exception as error:
                metrics.SINK_ERRORS.inc()
                if self._stop.is_set() or not self._watching():
                    log.warning("dropping %s after sink failure while stopping: %s", key, error)
                    return
                delay = backoff.next_delay()
                log.warning("sink failed for %s (%s); retrying in %.1fs", key, error, delay)
                self._stop.wait(delay)

    def _watching(self) -> bool:
        return bool(self._informers)

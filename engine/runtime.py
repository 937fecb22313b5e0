"""What a worker process runs with, as one :class:`Runtime`: Redis client, work queue and its parts, enqueuer, shared
cache, Kubernetes client, the reconcilers, and the clock they all read time from (:mod:`workqueue.clock`).

A worker or beat process holds one :class:`ProcessRuntime`, made when it starts, which builds the :class:`Runtime`
on first use, i.e. inside each prefork child after the fork, so no socket is shared across processes. Tests build a
:class:`Runtime` of their own (:func:`build`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import redis

from cache.handle_index import RedisHandleIndex
from cache.journal import RunJournal
from cache.reader import CachedKubeClient
from cache.store import ObjectCache
from engine import redis_client
from engine.enqueue import Enqueuer, Publisher
from engine.own_writes import OwnWrites
from engine.sweeps import CleanMarks
from poolboy.reconcilers import RECONCILERS, Reconciler
from poolboy.settings import Settings
from workqueue.clock import SYSTEM_CLOCK, Clock
from workqueue.delaying import DelayingQueue
from workqueue.lease import Renewer
from workqueue.queue import Encoder, WorkQueue
from workqueue.ratelimit import RateLimiter

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    settings: Settings
    redis: redis.Redis
    queue: WorkQueue
    delaying: DelayingQueue
    limiter: RateLimiter
    renewer: Renewer
    own_writes: OwnWrites
    enqueuer: Enqueuer
    clean_marks: CleanMarks | None = None
    cache: ObjectCache | None = None
    handle_index: RedisHandleIndex | None = None
    #: what the runs read time from: the work queue's, so that deadlines, marks and durations agree
    clock: Clock = SYSTEM_CLOCK
    #: kind token -> the reconciler a run of that kind calls
    reconcilers: Mapping[str, Reconciler] = field(default_factory=lambda: RECONCILERS)
    _kube: Any = field(default=None, repr=False)

    @property
    def kube(self) -> Any:
        """The :class:`poolboy.kube.KubeClient`, built on first use (None if no cluster configuration is found)."""
        if self._kube is None:
            try:
                from poolboy.kube import KubeClient

                self._kube = KubeClient.from_settings(self.settings)
            except Exception as error:
                log.warning("no Kubernetes client: %s", error)
                return None
        return self._kube

    def reader(self) -> CachedKubeClient | None:
        """A fresh per-run client: cache-first reads; writes go into the cache with the run's last round trip
        (its :class:`~cache.journal.RunJournal`, read by :func:`engine.runner.finish`)."""
        kube = self.kube
        return None if kube is None else CachedKubeClient(kube, self.cache, journal=RunJournal())


class ProcessRuntime:
    """The runtime of one worker or beat process: what it is made of, given once when the process starts (how it
    publishes runs and how the queue encodes their messages, the app's; its settings; the reconcilers it runs), and
    the :class:`Runtime` itself, built on first use (:meth:`get`).

    The app that starts a worker or beat makes one (:class:`workers.operator_app.OperatorApp`) and its tasks take the
    runtime from it; the engine is handed the :class:`Runtime`, and keeps none of its own."""

    def __init__(self, publisher: Publisher, settings: Settings, encoder: Encoder,
                 reconcilers: Mapping[str, Reconciler] = RECONCILERS, clock: Clock = SYSTEM_CLOCK) -> None:
        self.publisher = publisher
        self.settings = settings
        self.encoder = encoder
        #: kind token -> the reconciler this process runs: the domain's unless the worker is given others
        self.reconcilers = reconcilers
        self.clock = clock
        #: held while the runtime is built: under the threads pool the first tasks (and the warm-up, workers.app)
        #: may ask for it at once, and there must be one queue, one lease renewer, one set of hooks
        self._building = threading.Lock()
        self._built: Runtime | None = None

    def get(self) -> Runtime:
        """The process's runtime, built by its first caller: under prefork inside each child after the fork (the
        parent never asks), so that no socket or thread is shared across processes."""
        with self._building:
            if self._built is None:
                from engine import metrics, own_writes, run_log

                metrics.install_api_hook()
                own_writes.install_write_hook()
                run_log.install()
                self._built = build(self.publisher, self.settings, self.encoder, redis_client.client(self.settings),
                                    self.clock, self.reconcilers)
            return self._built


def build(publisher: Publisher, settings: Settings, encoder: Encoder | None, client: redis.Redis,
          clock: Clock = SYSTEM_CLOCK, reconcilers: Mapping[str, Reconciler] = RECONCILERS) -> Runtime:
    """A runtime on ``client``, keeping time by ``clock``, running ``reconcilers``: a process's
    (:meth:`ProcessRuntime.get`), or a test's."""
    queue = work_queue(settings, encoder, client, clock)
    cache = ObjectCache(client, settings.domain) if settings.read_cache else None
    return Runtime(settings=settings, redis=client, queue=queue, delaying=DelayingQueue(queue),
                   limiter=RateLimiter(client, settings.retry_backoff_max, settings.retry_backoff_api_max),
                   renewer=Renewer(queue), own_writes=OwnWrites(queue), enqueuer=Enqueuer(queue, publisher),
                   clean_marks=CleanMarks(client, settings, clock) if cache else None, cache=cache,
                   handle_index=RedisHandleIndex(client, settings.api_version, settings.operator_namespace)
                   if cache else None, clock=clock, reconcilers=reconcilers)


def work_queue(settings: Settings, encoder: Encoder | None, client: redis.Redis | None = None,
               clock: Clock = SYSTEM_CLOCK) -> WorkQueue:
    """The work queue of ``settings``, pushing the reconcile messages ``encoder`` makes itself."""
    return WorkQueue(client or redis_client.client(settings), settings.workqueue_lease_seconds,
                     settings.workqueue_pending_ttl, settings.workqueue_stale_seconds, encoder=encoder, clock=clock)

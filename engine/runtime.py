"""Per-process singletons of a worker: Redis client, work queue and its parts, enqueuer, shared cache, Kubernetes
client, and the clock they all read time from (:mod:`workqueue.clock`).

Created lazily on first use, i.e. inside each prefork child after the fork, so no socket is shared across
processes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
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


#: held while the process's :class:`Runtime` is built: under the threads pool the first tasks (and the warm-up,
#: workers.app) may ask for it at once, and there must be one queue, one lease renewer, one set of hooks
_building = threading.Lock()
#: the worker's publisher, settings, message encoder and reconcilers (kind token -> reconciler), given by the app
#: itself (:func:`configure`) rather than imported from it, so that the runtime depends on no particular app and the
#: app module on nothing of the runtime until its worker starts
_configured: tuple[Publisher, Settings, Encoder, Mapping[str, Reconciler]] | None = None


def configure(publisher: Publisher, settings: Settings, encoder: Encoder,
              reconcilers: Mapping[str, Reconciler] = RECONCILERS) -> None:
    """Name how this process publishes runs and how the queue encodes their messages (the app's), its settings and
    the reconcilers it runs (the domain's unless the worker is given others); the worker's app does it when the
    worker starts (``worker_init``: before the pool forks, so pool children inherit it)."""
    global _configured
    _configured = (publisher, settings, encoder, reconcilers)


def reconcilers() -> Mapping[str, Reconciler]:
    """Kind token -> the reconciler this worker runs (:func:`configure`)."""
    if _configured is None:
        raise _not_configured()
    return _configured[3]


def runtime() -> Runtime:
    with _building:
        return _runtime()


@cache
def _runtime() -> Runtime:
    from engine import metrics, own_writes, run_log

    if _configured is None:
        raise _not_configured()
    publisher, settings, encoder, _ = _configured
    metrics.install_api_hook()
    own_writes.install_write_hook()
    run_log.install()
    return build(publisher, settings, encoder, redis_client.client(settings))


def _not_configured() -> RuntimeError:
    return RuntimeError("engine.runtime.configure(publisher, settings, encoder) was not called: a worker's app "
                        "calls it when the worker starts (workers.app)")


def build(publisher: Publisher, settings: Settings, encoder: Encoder | None, client: redis.Redis,
          clock: Clock = SYSTEM_CLOCK) -> Runtime:
    """A runtime on ``client``, keeping time by ``clock``: the worker's (:func:`runtime`), or a test's."""
    queue = work_queue(settings, encoder, client, clock)
    cache = ObjectCache(client, settings.domain) if settings.read_cache else None
    return Runtime(settings=settings, redis=client, queue=queue, delaying=DelayingQueue(queue),
                   limiter=RateLimiter(client, settings.retry_backoff_max, settings.retry_backoff_api_max),
                   renewer=Renewer(queue), own_writes=OwnWrites(queue), enqueuer=Enqueuer(queue, publisher),
                   clean_marks=CleanMarks(client, settings, clock) if cache else None, cache=cache,
                   handle_index=RedisHandleIndex(client, settings.api_version, settings.operator_namespace)
                   if cache else None, clock=clock)


def work_queue(settings: Settings, encoder: Encoder | None, client: redis.Redis | None = None,
               clock: Clock = SYSTEM_CLOCK) -> WorkQueue:
    """The work queue of ``settings``, pushing the reconcile messages ``encoder`` makes itself."""
    return WorkQueue(client or redis_client.client(settings), settings.workqueue_lease_seconds,
                     settings.workqueue_pending_ttl, settings.workqueue_stale_seconds, encoder=encoder, clock=clock)

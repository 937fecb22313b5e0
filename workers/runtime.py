"""Per-process singletons of a worker: Redis client, gate, due-index, enqueuer, shared cache, Kubernetes client.

Created lazily on first use, i.e. inside each prefork child after the fork, so no socket is shared across
processes.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import redis

from cache.handle_index import RedisHandleIndex
from cache.journal import RunJournal
from cache.reader import CachedKubeClient
from cache.store import ObjectCache
from poolboy.settings import Settings
from workers import redis_client
from workers.due import DueIndex
from workers.enqueue import Enqueuer
from workers.gate import Gate

if TYPE_CHECKING:
    from celery import Celery

    from poolboy.reconcilers import Registry

log = logging.getLogger(__name__)

#: ``<module>:<attr>`` of a mapping of kind token to reconciler, run instead of the domain's (the integration tests'
#: instrumented reconcilers); see :func:`poolboy.reconcilers.registry`
RECONCILERS_ENV = "POOLBOY_RECONCILERS"


def reconcilers() -> Registry:
    """The one registry this worker runs: the domain's, or the one ``POOLBOY_RECONCILERS`` names."""
    from poolboy.reconcilers import registry  # the domain is imported when the first task (or preload) needs it

    return registry(os.environ.get(RECONCILERS_ENV))


@dataclass
class Runtime:
    settings: Settings
    redis: redis.Redis
    gate: Gate
    due: DueIndex
    enqueuer: Enqueuer
    cache: ObjectCache | None = None
    handle_index: RedisHandleIndex | None = None
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
        (its :class:`~cache.journal.RunJournal`, read by :func:`workers.tasks.finish`)."""
        kube = self.kube
        return None if kube is None else CachedKubeClient(kube, self.cache, journal=RunJournal())


#: held while the process's :class:`Runtime` is built: under the threads pool the first tasks (and the warm-up,
#: workers.app) may ask for it at once, and there must be one gate, one lease renewer, one set of hooks
_building = threading.Lock()
#: the worker's app and settings, given by the app itself (:func:`configure`) rather than imported from it, so that
#: the runtime depends on no particular app and the app module on nothing of the runtime until its worker starts
_configured: tuple[Celery, Settings] | None = None


def configure(app: Celery, settings: Settings) -> None:
    """Name the app whose tasks this process runs and its settings; the worker's app does it when the worker starts
    (``worker_init``: before the pool forks, so pool children inherit it)."""
    global _configured
    _configured = (app, settings)


def runtime() -> Runtime:
    with _building:
        return _runtime()


@cache
def _runtime() -> Runtime:
    from workers import metrics, own_writes, run_log

    if _configured is None:
        raise RuntimeError("workers.runtime.configure(app, settings) was not called: a worker's app calls it when "
                           "the worker starts (workers.app)")
    app, settings = _configured
    metrics.install_api_hook()
    own_writes.install_write_hook()
    run_log.install()
    client = redis_client.client(settings)
    gate = Gate.from_settings(settings, client)
    cache = ObjectCache(client, settings.domain) if settings.read_cache else None
    index = RedisHandleIndex(client, settings.api_version, settings.operator_namespace) if cache else None
    return Runtime(settings, client, gate, DueIndex(client), Enqueuer(settings, app, gate), cache, index)

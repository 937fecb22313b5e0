"""Beat's periodic tasks (queue ``periodic``): per-kind manage sweeps and the full resync. (Deadlines and retries
are released by every worker's pump, :mod:`workers.pump`, not by beat.)

Every task here only *adds keys to the work queue*, so running it twice is harmless: the queue coalesces duplicate
adds, so even two beats ticking at once would cost nothing but duplicate sweeps. Beat runs
celery-redbeat (:mod:`workers.beat_scheduler`): run two replicas, the holder of the Redis lock ticks and the other
takes over when it dies.

A manage sweep the shared cache can answer runs in beat itself (:func:`sweep_cached`): at rest it adds nothing and
sends no task, so Flower shows only the reconciles a sweep finds owed. The resync, and a sweep the cache cannot answer,
are tasks for a worker, which has API credentials. They list objects page by page (bounded memory) and add them at
priority ``resync``, so a big resync never delays a live event (Redis message priorities, prefetch 1).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from celery import Task, shared_task

from engine import metrics, sweeps
from engine.runtime import Runtime
from poolboy import keys, kinds
from poolboy.kinds import Kind
from poolboy.kube import ApiError
from workers.names import PERIODIC_PREFIX, manage_task

log = logging.getLogger(__name__)

#: the kinds with a periodic manage sweep (:attr:`poolboy.kinds.Kind.sweep_interval`)
SWEPT: tuple[Kind, ...] = tuple(kind for kind in kinds.DECLARED if kind.sweep_interval)
#: task name of each swept kind's manage sweep -> its token
MANAGE_TASKS = {manage_task(kind): kind.token for kind in SWEPT}


def sweep_cached(rt: Runtime, kind: str, priority: str = "resync") -> int | None:
    """Add the objects of ``kind`` a sweep must run (:mod:`engine.sweeps`: converged claims and handles are passed
    over) from the shared cache's index: how many, or None when the cache cannot answer. Needs Redis only, so beat
    runs it itself (:class:`workers.beat_scheduler.Scheduler`) and sends no task when it can answer."""
    if rt.cache is None:
        return None
    namespace = _namespace(rt, kind)
    cached = rt.cache.names(rt.settings.api_version, keys.KINDS[kind], namespace)
    if cached is None:
        return None
    found = _owed(rt, kind, [keys.make(kind, ns, name) for ns, name in cached])  # the cache holds no ignored object
    rt.enqueuer.add_many(found, priority)
    return len(found)


def enqueue_kind(rt: Runtime, kind: str, priority: str = "resync", *, from_cache: bool = True) -> int:
    """Add the objects of ``kind`` (not labelled ``<domain>/ignore``) a sweep must run to the queue: from the shared
    cache's index when it can answer (:func:`sweep_cached`), else from the API one page at a time."""
    if rt.kube is None:
        raise RuntimeError("no Kubernetes client configured")
    found = sweep_cached(rt, kind, priority) if from_cache else None
    if found is not None:
        return found
    namespace = _namespace(rt, kind)
    selector = "!" + rt.settings.label("ignore")
    total = 0
    for page in rt.kube.list_pages(rt.settings.api_version, keys.KINDS[kind], namespace, label_selector=selector):
        versions = {keys.for_object(obj): obj["metadata"]["resourceVersion"] for obj in page}
        found_keys = _owed(rt, kind, list(versions), versions)
        rt.enqueuer.add_many(found_keys, priority)
        total += len(found_keys)
    return total


def _namespace(rt: Runtime, kind: str) -> str | None:
    """Where objects of the kind token ``kind`` live: everywhere (None) or the operator namespace."""
    return None if kinds.BY_TOKEN[kind].all_namespaces else rt.settings.operator_namespace


def _owed(rt: Runtime, kind: str, candidates: list[str], versions: Mapping[str, str] | None = None) -> list[str]:
    """The objects among ``candidates`` a sweep must run (:mod:`engine.sweeps`), at the versions the API listed
    (``versions``) or else the cache's."""
    if kind not in sweeps.FILTERED or rt.clean_marks is None:
        return candidates
    found = sweeps.dirty_keys(rt.redis, rt.settings, candidates, versions, now=rt.clock.now())
    metrics.SWEEP_SKIPPED.labels(kind=kind).inc(len(candidates) - len(found))
    return found


def _manage_task(kind: Kind) -> None:
    def manage(self: Task) -> int:
        try:
            return enqueue_kind(self.app.runtime.get(), kind.token)
        except ApiError as error:  # refused (403) or the API away: one line, and the next sweep tries again
            log.warning("periodic sweep of %s: %s; the next sweep tries again", kind.name, error)
            return 0

    manage.__name__ = manage.__qualname__ = f"manage_{kind.queue}"
    manage.__doc__ = f"Periodic sweep of the {kind.name}s (resync priority)."
    shared_task(name=manage_task(kind), bind=True, ignore_result=True, acks_late=False)(manage)


for _kind in SWEPT:
    _manage_task(_kind)


@shared_task(name=PERIODIC_PREFIX + "resync", bind=True, ignore_result=True, acks_late=False)
def resync(self: Task) -> dict[str, int]:
    """The safety net, from the API: add every pool and the claims and handles that changed, owe a run or are due
    for their refresh (:mod:`engine.sweeps`); after a Redis loss that is everything, which rebuilds work queue and
    delaying queue."""
    rt = self.app.runtime.get()
    counts: dict[str, int] = {}
    for kind in keys.KINDS:
        try:
            counts[kind] = enqueue_kind(rt, kind, from_cache=False)  # the safety net reads the source of truth
        except ApiError as error:  # refused, or the API away: the next resync tries again
            log.warning("resync of %s: %s; the next resync tries again", keys.KINDS[kind], error)
        except Exception:  # one missing kind (CRD not installed) must not stop the others
            log.exception("resync of %s failed", kind)
    return counts

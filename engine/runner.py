"""One run of one key, from the message to the release: START, reconcile under a renewed lease, then one round trip
that records what the run wrote and asked for and releases the key (DONE).

How a newcomer follows a claim: the watcher's event ADDs ``claim/ns/name`` (:mod:`engine.enqueue`), whose message
reaches a worker's task (:mod:`workers.tasks`), which calls :func:`execute` with its process's runtime
(:mod:`engine.runtime`):

1. :func:`begin` takes the key's lease (the queue's START) and, in the same round trip, reads the claim from the
   shared cache for the run's reader;
2. :func:`reconcile_once` runs the domain reconciler (:mod:`poolboy.reconcilers`) and says what came of it, an
   :mod:`engine.outcome`;
3. :func:`finish` maps that outcome to the queue in the one switch there is, and in the run's last round trip puts
   the run's writes into the cache, wakes the keys it asked for, records its own writes, and releases the key,
   which publishes one more run if the claim changed meanwhile;
4. when the claim's run bound or created a handle nothing else runs or owes a run of, that round trip leases the
   handle instead of queueing it, and :func:`execute` runs it next in the same task (a :class:`Continuation`, at
   most ``continued_runs`` per task).

Every run ends with one log line naming its object, outcome and duration (:mod:`engine.run_log`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

from cache.reader import CachedKubeClient
from engine import metrics, own_writes, redis_oom, run_log, shutdown, sweeps
from engine.outcome import Failed, HandedBack, Outcome, Refused, Succeeded
from engine.runtime import Runtime
from poolboy.context import Context
from poolboy.domain import refusals
from poolboy.keys import KINDS, parse
from poolboy.kube import ApiError, Forbidden, event_recorder
from poolboy.observability import labelled
from poolboy.result import PermanentError, Result, TransientError
from workqueue.lease import LeaseKeeper
from workqueue.queue import Added, Started
from workqueue.roundtrip import Reply, RoundTrip

if TYPE_CHECKING:
    from poolboy.kube import KubeClient

log = logging.getLogger(__name__)


# --- what came of the reconcile ----------------------------------------------------------------------------------

def _api_fault(error: BaseException) -> bool:
    """The API server failed the request (5xx, 429, no answer), or the reconciler said the failure is transient."""
    return isinstance(error, TransientError) or (isinstance(error, ApiError) and bool(error.transient))


def _succeeded(result: Any) -> Succeeded:
    if not isinstance(result, Result):
        result = Result()
    return Succeeded(result.requeue_at, tuple(result.wake), tuple(result.hold), result.hold_seconds)


def _refused(rt: Runtime, kind: str, error: PermanentError) -> Refused:
    metrics.RECONCILE_ERRORS.labels(controller=kind).inc()
    after = error.recheck_after if error.recheck_after is not None else rt.settings.permanent_error_recheck
    return Refused(error, after, rt.clock.now() + after, tuple(error.wake))


def _failed(rt: Runtime, kind: str, key: str, error: BaseException) -> Failed:
    """The rate limiter's backoff for ``key``: the server's Retry-After honoured, and an API fault's passing soon."""
    delay = rt.limiter.when(key, retry_after=getattr(error, "retry_after", None) or None, fault=_api_fault(error))
    metrics.RECONCILE_ERRORS.labels(controller=kind).inc()
    metrics.RETRY_DELAY.labels(controller=kind).observe(delay)
    return Failed(delay, f"transient error, retry {rt.limiter.num_requeues(key)} in {delay:.1f}s: {error}")


def run_context(rt: Runtime, kube: CachedKubeClient | None, promises: own_writes.Promises | None = None) -> Context:
    """The domain's context for one run: the run's reader with the engine's read-ahead and handle index, the API
    client's Events, discovery and uncached reads, and the run's promises to wake keys; without a cluster, one whose
    first request says so."""
    if kube is None:
        return Context.without_cluster(rt.settings, "no Kubernetes client could be built: see the worker's log",
                                       promises)
    api: KubeClient = rt.kube
    index = rt.handle_index.for_run(kube.prime) if rt.handle_index is not None else None
    return Context(kube=kube, events=api.events, mapper=api.discovery, settings=rt.settings, index=index, api=api,
                   prefetcher=kube.prefetch, promiser=promises)


def reconcile_once(rt: Runtime, kind: str, key: str, kube: CachedKubeClient | None,
                   promises: own_writes.Promises | None = None) -> Outcome:
    """Call the domain reconciler once and say what came of it; never raises for reconcile failures (only
    :class:`engine.shutdown.HandBack`, which is not one)."""
    _, namespace, name = parse(key)
    try:
        reconciler = rt.reconcilers[kind]
        with shutdown.interruptible(rt.settings.reconcile_soft_time_limit):
            result = reconciler(run_context(rt, kube, promises), namespace, name)
    except PermanentError as error:
        return _refused(rt, kind, error)
    except Forbidden as error:  # a refusal the kind did not report on its object: still the installer's to fix
        return _refused(rt, kind, refusals.permanent(error))
    except Exception as error:
        if not _api_fault(error):
            log.exception("%s: reconcile failed; retrying with backoff", key)
        return _failed(rt, kind, key, error)
    return _succeeded(result)


# --- the run's end: the one switch from outcome to queue ----------------------------------------------------------

def _wake(rt: Runtime, trip: RoundTrip, keys: tuple[str, ...], seen: list[str],
          promises: own_writes.Promises | None, take: str = "") -> tuple[list[Reply[Added]], str | None]:
    """WAKE each key, those the run promised to wake among them whatever the outcome (their events were held).
    Given ``take`` (a lease token), the first promised key, if idle, is leased to go on with instead of queued: the
    key asked to be taken is returned with the replies."""
    promised = promises.keys if promises is not None else set()
    token = promises.token if promises is not None else ""
    every = tuple(dict.fromkeys((*keys, *sorted(promised))))
    taken = next((key for key in every if key in promised), None) if take else None
    woken = [trip.call(rt.own_writes.wake_call(key, seen, token, key in promised, take if key == taken else ""))
             for key in every]
    return woken, taken


@dataclass(frozen=True)
class Continuation:
    """A key the finished run woke and leased under ``token`` (``WAKE``'s "continued"): the task runs it next, with
    its object as the cache held it once leased (``read``)."""

    kind: str
    key: str
    token: str
    read: Callable[[], dict | None] | None = None


def _hold(rt: Runtime, trip: RoundTrip, keys: tuple[str, ...], seen: list[str], window: float) -> None:
    for key in keys:
        if seen:
            trip.atomic(rt.own_writes.note_call(key, seen), rt.delaying.hold_call(key, window))
        else:
            trip.call(rt.delaying.hold_call(key, window))


def _mark_clean(rt: Runtime, trip: RoundTrip, kind: str, key: str, token: str) -> None:
    """The periodic sweeps pass the object over until it changes (:mod:`engine.sweeps`): its run ended in a state
    only a change, or its own schedule, moves on from."""
    if rt.clean_marks is not None and kind in sweeps.FILTERED:
        trip.call(rt.clean_marks.mark_call(key, token))


def finish(rt: Runtime, kind: str, key: str, token: str, outcome: Outcome, writes: own_writes.Collector,
           kube: CachedKubeClient | None, promises: own_writes.Promises | None = None,
           take: str = "") -> Continuation | None:
    """The run's last round trip: its deferred cache writes first (a run it wakes reads them), then what the outcome
    asks of the queue, then its own writes settled and the key released, atomically (:mod:`engine.own_writes`:
    an event that arrives between the two would otherwise be lost). Then the publishes no script made itself.
    Given ``take`` (a lease token), a succeeded run leases the first key it promised to wake, if that key is idle,
    and returns it for the task to run next."""
    trip = RoundTrip(rt.redis)
    puts = [trip.call(put) for put in kube.journal.deferred_puts(rt.cache)] \
        if kube is not None and rt.cache is not None else []
    seen = writes.idents
    woken: list[Reply[Added]] = []
    taken: str | None = None
    match outcome:
        case Succeeded(requeue_at=requeue_at, wake=wake, hold=hold, hold_seconds=window):
            woken, taken = _wake(rt, trip, wake, seen, promises, take)
            promised = promises.keys if promises is not None else set()
            _hold(rt, trip, tuple(k for k in hold if k not in promised), seen,
                  rt.settings.hold_seconds if window is None else window)
            if requeue_at is not None:
                trip.call(rt.delaying.add_after_call(key, requeue_at))
            rt.limiter.forget(key, trip)
            trip.command("DEL", run_log.logged_key(key))
            _mark_clean(rt, trip, kind, key, token)
        case Failed(retry_in=retry_in):
            woken, _ = _wake(rt, trip, (), seen, promises)
            trip.call(rt.delaying.add_after_call(key, rt.clock.now() + retry_in))
        case Refused(recheck_at=recheck_at, wake=wake):
            woken, _ = _wake(rt, trip, wake, seen, promises)
            trip.call(rt.delaying.add_after_call(key, recheck_at))
            rt.limiter.forget(key, trip)
            _mark_clean(rt, trip, kind, key, token)  # its re-check is due in the delaying queue, not at every sweep
        case HandedBack():
            woken, _ = _wake(rt, trip, (), seen, promises)
            trip.call(rt.queue.add_call(key))  # marked owed while the lease is ours: DONE re-publishes it at once
    # the versions the run got count as its own: an event of one of them brings it nothing new
    acted_on = [*seen, *kube.journal.seen()] if kube is not None else seen
    settled, released = trip.atomic(rt.own_writes.settle_call(key, acted_on), rt.queue.done_call(key, token))
    # the key to go on with is read as it is once leased (after this trip's WAKE), as START's round trip reads it
    read_next = _read_own(rt, trip, parse(taken)[0], taken) if taken is not None else None
    trip.send()
    for put in puts:
        if put.error is not None:  # the cache only costs speed
            log.debug("%s: cache write failed: %s", key, put.error)
    rt.enqueuer.settle([reply.value for reply in woken])
    counts = settled.value
    labelled(own_writes.DEFERRED_EVENTS, "own-write").inc(counts.deferred - counts.foreign)
    labelled(own_writes.DEFERRED_EVENTS, "rerun").inc(counts.foreign)
    rt.enqueuer.publish_many([released.value])
    if taken is None or not any(reply.value.outcome == "continued" for reply in woken):
        return None
    return Continuation(parse(taken)[0], taken, take, read_next)


# --- the run ------------------------------------------------------------------------------------------------------

def _read_own(rt: Runtime, trip: RoundTrip, kind: str, key: str) -> Callable[[], dict | None] | None:
    """A step of ``trip`` that reads the run's own object from the cache, the first thing every reconcile reads."""
    if rt.cache is None:
        return None
    _, namespace, name = parse(key)
    return rt.cache.get_step(trip, rt.settings.api_version, KINDS[kind], namespace, name)


def _prime(read: Callable[[], dict | None] | None, kube: CachedKubeClient | None) -> None:
    obj = read() if read is not None else None
    if obj is not None and kube is not None:
        kube.prime(obj)


def begin(rt: Runtime, kind: str, key: str, token: str, msg_id: str,
          kube: CachedKubeClient | None) -> Started | None:
    """START, and in the same round trip the run's own object from the cache (read after START, as the reconcile
    would read it)."""
    trip = RoundTrip(rt.redis)
    started = trip.call(rt.queue.start_call(key, token, msg_id))
    read = _read_own(rt, trip, kind, key) if kube is not None else None
    trip.send()
    if started.value is not None:
        _prime(read, kube)
    return started.value



def _new_token(msg_id: str) -> str:
    return f"{msg_id}/{uuid.uuid4().hex[:8]}"


def _take(rt: Runtime, msg_id: str, continued: int, began: float) -> str:
    """The lease token under which a run may lease the key it promised to wake and have this task run it next; ''
    once the task has gone on as often, or as long, as it may, or the worker is stopping. Going on saves the key's
    message and its consumer's work; a run the key's own message would have started is no different."""
    if continued >= rt.settings.continued_runs or shutdown.stopping() \
            or rt.clock.monotonic() - began > rt.settings.reconcile_soft_time_limit / 4:
        return ""
    return _new_token(msg_id)


def execute(rt: Runtime, msg_id: str | None, kind: str, key: str) -> str:
    """Run ``key`` once for the message ``msg_id`` with the process's runtime ``rt``, then the keys its runs lease to
    go on with: the task body of ``poolboy.reconcile.<kind>``. The result is the first run's."""
    msg_id = msg_id or uuid.uuid4().hex
    token = _new_token(msg_id)
    kube = rt.reader()
    try:
        started = begin(rt, kind, key, token, msg_id, kube)
    except redis.RedisError as error:
        if not redis_oom.is_oom(error):
            raise
        redis_oom.report(log, f"{key} does not run now (the watcher lists it again once Redis accepts writes)",
                         error)
        labelled(metrics.WORKQUEUE_STARTS, "refused").inc()
        return "refused"
    if started is None:
        labelled(metrics.WORKQUEUE_STARTS, "busy").inc()
        return "busy"
    labelled(metrics.WORKQUEUE_STARTS, "started").inc()
    if started.waited is not None:
        labelled(metrics.WORKQUEUE_WAIT, kind).observe(started.waited)
    began = rt.clock.monotonic()
    result, after = run(rt, kind, key, token, kube, _take(rt, msg_id, 0, began))
    continued = 0
    while after is not None:
        continued += 1
        labelled(metrics.WORKQUEUE_STARTS, "continued").inc()
        kube = rt.reader()
        _prime(after.read, kube)
        _, after = run(rt, after.kind, after.key, after.token, kube, _take(rt, msg_id, continued, began))
    return result


def run(rt: Runtime, kind: str, key: str, token: str, kube: CachedKubeClient | None,
        take: str = "") -> tuple[str, Continuation | None]:
    """One run of ``key``, whose lease ``token`` holds: the reconcile under the renewed lease, its log line, and its
    end (:func:`finish`); the run's result and the key it leased to go on with, if any."""
    began = rt.clock.monotonic()
    outcome: Outcome = Failed(0.0, "error")
    writes = own_writes.Collector()
    promises = own_writes.Promises(rt.own_writes, token)
    with run_log.running(key) as running, event_recorder.foreground():
        try:
            with LeaseKeeper(rt.renewer, key, token, rt.settings.reconcile_time_limit) as keeper, \
                    own_writes.collecting(writes):
                outcome = reconcile_once(rt, kind, key, kube, promises)
            if keeper.lost.is_set():
                log.warning("%s: lease lost during the run; another run may have overlapped", key)
        except shutdown.HandBack:
            log.warning("%s: worker stopping, grace period over; handing the key back", key)
            outcome = HandedBack()
        finally:
            elapsed = rt.clock.monotonic() - began
            labelled(metrics.RECONCILE_TIME, kind).observe(elapsed)
            labelled(metrics.RECONCILE_TOTAL, kind, outcome.result).inc()
            text, level = run_log.describe(outcome, rt.redis, key)
            run_log.report(running, text, elapsed, level)
            after = finish_or_report(rt, kind, key, token, outcome, writes, kube, promises, take)
    return outcome.result, after


def finish_or_report(rt: Runtime, kind: str, key: str, token: str, outcome: Outcome, writes: own_writes.Collector,
                     kube: CachedKubeClient | None, promises: own_writes.Promises | None = None,
                     take: str = "") -> Continuation | None:
    """:func:`finish`, with Redis refusing the record for memory reported in one line instead of failing the task:
    the run's lease then lapses and the work queue runs the key again (:mod:`engine.redis_oom`)."""
    try:
        return finish(rt, kind, key, token, outcome, writes, kube, promises, take)
    except redis.RedisError as error:
        if not redis_oom.is_oom(error):
            raise
        redis_oom.report(log, f"the outcome of {key}'s run is not recorded (its lease lapses and it runs again)",
                         error)
        return None

"""``poolboy.reconcile.<kind>``: one task per kind, each a thin shell around the domain reconciler.

START the gate (drop the message if another run holds the key), reconcile under a renewed lease, map the outcome
to the due-index / the gate / a short countdown, and always DONE (which re-publishes once if events arrived during
the run). DONE also settles the run's own writes (:mod:`workers.own_writes`): their watch events do not run the key
again, while any other change that arrived during the run does. Outcomes:

* ``Result`` -> done; ``requeue_at`` goes to the due-index, ``enqueue`` keys go through the gate.
* ``PermanentError`` -> re-check at now + ``recheck_after`` via the due-index (never a hot loop); so is a 403
  (:mod:`poolboy.domain.refusals`): a missing grant is the installer's to fix, not a passing fault.
* :class:`workers.shutdown.HandBack` (the worker is stopping and its grace period is over) -> the key is marked
  pending before DONE, so DONE re-publishes it for another worker and releases the lease at once.
* ``TransientError``, a transient ``ApiError``, or any other exception (logged with traceback) -> per-key backoff
  with full jitter capped at ``retry_backoff_max``, honouring a 429's Retry-After; a short delay is a Celery
  countdown (at most :data:`workers.config.MAX_COUNTDOWN`), a longer one a due-index entry.

Every run ends with one log line naming its object, outcome and duration (:mod:`workers.run_log`).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import redis
from celery import Task, shared_task

from cache.reader import CachedKubeClient
from poolboy.context import Context
from poolboy.domain import refusals
from poolboy.keys import KINDS, parse
from poolboy.kube import Forbidden, event_recorder
from poolboy.observability import labelled
from poolboy.result import PermanentError, Result, TransientError
from workers import backoff, metrics, own_writes, run_log, shutdown, sweeps
from workers.config import MAX_COUNTDOWN
from workers.gate import Done, LeaseKeeper, Started
from workers.names import reconcile_task, route
from workers.runtime import Runtime, reconcilers, runtime
from workers.scripting import evalsha_combined

if TYPE_CHECKING:
    from poolboy.kube import KubeClient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    result: str  # controller-runtime result label: success | requeue_after | error | permanent_error
    retry_in: float | None = None  # short countdown retry to publish after DONE
    text: str = "error"  # what the run's log line says happened (workers.run_log)
    level: int | None = None  # that line's level; None: INFO if the run wrote, else DEBUG
    #: what the run's last round trip records with DONE (:func:`finish`): keys to wake, keys to wake after a
    #: short countdown, and the key's next deadline in the due-index
    enqueue: tuple[str, ...] = ()
    batch: tuple[str, ...] = ()
    due_at: datetime | float | None = None


def _transient_api_error(error: BaseException) -> bool:
    try:
        from poolboy.kube import ApiError
    except ImportError:
        return False
    return isinstance(error, ApiError) and bool(error.transient)


def _api_fault(error: BaseException) -> bool:
    """The API server failed the request (5xx, 429, no answer), or the reconciler said the failure is transient."""
    return isinstance(error, TransientError) or _transient_api_error(error)


def _retry_after(error: BaseException) -> float | None:
    value = getattr(error, "retry_after", None)
    return float(value) if value else None


def _on_success(result: Any) -> Outcome:
    if not isinstance(result, Result):
        result = Result()
    enqueue, batch = tuple(result.enqueue), tuple(result.batch)
    if result.requeue_at is not None:
        return Outcome("requeue_after", text=run_log.requeue_text(result.requeue_at), due_at=result.requeue_at,
                       enqueue=enqueue, batch=batch)
    return Outcome("success", text="done", enqueue=enqueue, batch=batch)


def _on_permanent(rt: Runtime, kind: str, key: str, error: PermanentError) -> Outcome:
    metrics.RECONCILE_ERRORS.labels(controller=kind).inc()
    return Outcome("permanent_error", text=f"permanent error {error.reason}: {error.message} "
                                           f"(re-check in {error.recheck_after:g}s)",
                   level=run_log.permanent_level(rt.redis, key, error), enqueue=tuple(error.enqueue),
                   due_at=time.time() + error.recheck_after)


def _on_transient(rt: Runtime, kind: str, key: str, error: BaseException) -> Outcome:
    failures = backoff.record_failure(rt.redis, key)
    settings = rt.settings
    cap = settings.retry_backoff_api_max if _api_fault(error) else settings.retry_backoff_max
    delay = backoff.delay(failures, _retry_after(error), cap, retry_after_cap=settings.retry_backoff_max)
    metrics.RECONCILE_ERRORS.labels(controller=kind).inc()
    metrics.RETRY_DELAY.labels(controller=kind).observe(delay)
    text = f"transient error, retry {failures} in {delay:.1f}s: {error}"
    if delay > MAX_COUNTDOWN:
        return Outcome("error", text=text, level=logging.INFO, due_at=time.time() + delay)
    return Outcome("error", retry_in=delay, text=text, level=logging.INFO)


def run_context(rt: Runtime, kube: CachedKubeClient | None) -> Context:
    """The domain's context for one run: the run's reader with the engine's read-ahead and handle index, and the
    API client's Events, discovery and uncached reads; without a cluster, one whose first request says so."""
    if kube is None:
        return Context.without_cluster(rt.settings, "no Kubernetes client could be built: see the worker's log")
    api: KubeClient = rt.kube
    index = rt.handle_index.for_run(kube.prime) if rt.handle_index is not None else None
    return Context(kube=kube, events=api.events, mapper=api.discovery, settings=rt.settings, index=index, api=api,
                   prefetcher=kube.prefetch)


def reconcile_once(rt: Runtime, kind: str, key: str, kube: CachedKubeClient | None) -> Outcome:
    """Call the domain reconciler once and say what it asked for; never raises for reconcile failures (only
    :class:`workers.shutdown.HandBack`, which is not one). ``kube`` is the run's reader: None when no cluster is
    configured (a reconciler that needs the API fails on first use, one that does not, like the engine's
    instrumented test reconcilers, runs)."""
    _, namespace, name = parse(key)
    try:
        reconciler = reconcilers().lookup(kind)
        # only the domain reconciler: never a gate or due-index call
        with shutdown.interruptible(rt.settings.reconcile_soft_time_limit):
            result = reconciler(run_context(rt, kube), namespace, name)
    except PermanentError as error:
        return _on_permanent(rt, kind, key, error)
    except TransientError as error:
        return _on_transient(rt, kind, key, error)
    except Forbidden as error:  # a refusal the kind did not report on its object: still the installer's to fix
        return _on_permanent(rt, kind, key, refusals.permanent(error))
    except Exception as error:
        if not _transient_api_error(error):
            log.exception("%s: reconcile failed; retrying with backoff", key)
        return _on_transient(rt, kind, key, error)
    return _on_success(result)


def hand_back(rt: Runtime, key: str) -> None:
    """The worker is stopping mid-run: mark the key pending while we still hold the lease, so DONE re-publishes it
    for another worker at once instead of it waiting for the lease to expire."""
    log.warning("%s: worker stopping, grace period over; handing the key back", key)
    try:
        rt.enqueuer.add(key, "event")
    except Exception as error:  # Redis is away: the lease reaper re-runs the key once the lease expires
        log.warning("%s: could not hand the key back: %s", key, error)


def _done_deletes(key: str, outcome: Outcome) -> tuple[str, ...]:
    """Per-key memories DONE deletes: a run that did not fail resets the key's backoff; a run that succeeded also
    forgets the permanent error it last announced, so the same error coming back is logged again."""
    if outcome.result == "error":
        return ()
    if outcome.result in ("success", "requeue_after"):
        return backoff.failures_key(key), run_log.logged_key(key)
    return (backoff.failures_key(key),)


def _sweep_marks(rt: Runtime, kind: str, key: str, outcome: Outcome) -> tuple[str, str]:
    """``(clean, dirty)``: the cached object a successful run records as reconciled at its current version, so the
    periodic sweeps of claims and handles pass it over until it changes (:mod:`workers.sweeps`); or the one whose
    record a run drops because its retry is a countdown message the gate does not know of, so a sweep runs it
    again if that message is lost (its worker killed, Redis flushed). '' for none."""
    if rt.cache is None or kind not in sweeps.FILTERED:
        return "", ""
    cached = sweeps.cached_object_key(rt.settings, key)
    if outcome.result in ("success", "requeue_after"):
        return cached, ""
    return "", cached if outcome.retry_in is not None else ""


def finish(rt: Runtime, kind: str, key: str, token: str, outcome: Outcome, writes: own_writes.Collector,
           kube: CachedKubeClient | None) -> Done:
    """The run's last Redis round trip, one script (:func:`workers.scripting.evalsha_combined`) in this order: its
    deferred cache writes, the ADDs of the keys it wakes, its next deadline, and DONE (own writes settled, the lease
    released). Then the publishes the gate scripts did not make themselves: the countdown ones, and DONE's re-run."""
    puts = kube.journal.deferred_puts(rt.cache) if kube is not None and rt.cache is not None else []
    gate = rt.gate
    seen = writes.idents
    adds = [gate.wake_call(k, seen) for k in outcome.enqueue] + [gate.wake_call(k, seen, push=False)
                                                                 for k in outcome.batch]
    deadline = [rt.due.schedule_call(key, outcome.due_at)] if outcome.due_at is not None else []
    clean, dirty = _sweep_marks(rt, kind, key, outcome)
    # the versions the run got count as its own: an event of one of them brings it nothing new (workers/own_writes.py)
    acted_on = [*writes.idents, *kube.journal.seen()] if kube is not None else writes.idents
    done_call = gate.done_call(key, token, also_delete=_done_deletes(key, outcome), mark_clean=clean,
                               writes=acted_on, mark_dirty=dirty)
    replies = evalsha_combined(rt.redis, [*puts, *adds, *deadline, done_call], raise_on_error=False)
    for reply in replies[:len(puts)]:
        if isinstance(reply, Exception):  # the cache only costs speed
            log.debug("%s: cache write failed: %s", key, reply)
    replies = replies[len(puts):]
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    added = [gate.add_result(k, reply)
             for k, reply in zip((*outcome.enqueue, *outcome.batch), replies[:len(adds)], strict=True)]
    woken = len(outcome.enqueue)
    rt.enqueuer.settle(added[:woken])
    # published a little later: adds meanwhile coalesce, so a burst runs the key once per window
    rt.enqueuer.settle(added[woken:], countdown=min(rt.settings.batch_seconds, MAX_COUNTDOWN))
    done = gate.done_result(key, replies[-1])
    labelled(own_writes.DEFERRED_EVENTS, "own-write").inc(done.deferred - done.foreign)
    labelled(own_writes.DEFERRED_EVENTS, "rerun").inc(done.foreign)
    if done.rerun:
        rt.enqueuer.publish(done.rerun)
    return done


def begin(rt: Runtime, kind: str, key: str, token: str, msg_id: str,
          kube: CachedKubeClient | None) -> Started | None:
    """START, and in the same round trip the run's own object from the cache, the first thing every reconcile
    reads (read after START, as the reconcile would read it): one round trip fewer per run."""
    script, script_keys, args = rt.gate.start_call(key, token, msg_id)
    if rt.cache is None or kube is None:
        return rt.gate.start_result(script(keys=script_keys, args=args))
    _, namespace, name = parse(key)
    for _attempt in range(2):
        pipe = rt.redis.pipeline(transaction=False)
        pipe.evalsha(script.sha, len(script_keys), *script_keys, *args)
        rt.cache.get_commands(pipe, rt.settings.api_version, KINDS[kind], namespace, name)
        reply, *read = pipe.execute(raise_on_error=False)
        if not isinstance(reply, redis.exceptions.NoScriptError):
            break
        rt.redis.script_load(script.script)  # first use, or Redis restarted: START did not run; once more
    if isinstance(reply, Exception):
        raise reply
    started = rt.gate.start_result(reply)
    if started is not None and not any(isinstance(r, Exception) for r in read):
        obj = rt.cache.get_reply(read)
        if obj is not None:
            kube.prime(obj)
    return started


def execute(task: Task, kind: str, key: str) -> str:
    rt = runtime()
    msg_id = task.request.id or uuid.uuid4().hex
    token = f"{msg_id}/{uuid.uuid4().hex[:8]}"
    kube = rt.reader()
    started = begin(rt, kind, key, token, msg_id, kube)
    if started is None:
        labelled(metrics.GATE_STARTS, "busy").inc()
        return "busy"
    labelled(metrics.GATE_STARTS, "started").inc()
    if started.waited is not None:
        labelled(metrics.GATE_WAIT, kind).observe(started.waited)
    began = time.monotonic()
    outcome = Outcome("error")
    writes = own_writes.Collector()
    with run_log.running(key) as run, event_recorder.foreground():
        try:
            with LeaseKeeper(rt.gate, key, token, rt.settings.reconcile_time_limit) as keeper, \
                    own_writes.collecting(writes):
                outcome = reconcile_once(rt, kind, key, kube)
            if keeper.lost.is_set():
                log.warning("%s: lease lost during the run; another run may have overlapped", key)
        except shutdown.HandBack:
            outcome = Outcome("handed_back", text="handed back (worker stopping)", level=logging.INFO)
        finally:
            elapsed = time.monotonic() - began
            labelled(metrics.RECONCILE_TIME, kind).observe(elapsed)
            labelled(metrics.RECONCILE_TOTAL, kind, outcome.result).inc()
            run_log.report(run, outcome.text, elapsed, outcome.level)
            if outcome.result == "handed_back":
                hand_back(rt, key)
            finish(rt, kind, key, token, outcome, writes, kube)
    if outcome.retry_in is not None:
        name, queue = route(key)
        task.app.send_task(name, args=[key], queue=queue, countdown=outcome.retry_in, priority=0)
    return outcome.result


def _make_task(kind: str) -> Task:
    def reconcile(self: Task, key: str) -> str:
        return execute(self, kind, key)

    reconcile.__name__ = reconcile.__qualname__ = f"reconcile_{kind}"
    reconcile.__doc__ = f"Reconcile one {KINDS[kind]} through the work gate."
    # max_retries bounds worker-lost re-sends (task_retry_on_worker_lost); default_retry_delay is their countdown.
    return shared_task(name=reconcile_task(kind), bind=True, max_retries=5, default_retry_delay=2)(reconcile)


TASKS: dict[str, Task] = {kind: _make_task(kind) for kind in KINDS}

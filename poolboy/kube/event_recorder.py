"""Kubernetes Events off the critical path: client-go's EventBroadcaster, one per process.

:meth:`ApiEventRecorder.emit` (the :class:`~poolboy.kube.interfaces.EventRecorder` a reconciler calls, one per
client: ``KubeClient.events``) hands the Event body to :func:`record`, which returns at once: the occurrence is
counted by the :class:`~poolboy.kube.events.Correlator` and, when a request is owed, put on a bounded in-process queue
that a few daemon threads drain. An Event is worth less than the reconcile that
reports it, so a bind never waits for one, and a slow or failing API server costs Events, never reconciles.

What a sending thread does with a series (see :mod:`poolboy.kube.events`): POST it the first time, PATCH ``count``,
``lastTimestamp`` and ``message`` afterwards. Occurrences that arrive while a send is queued or in flight are folded
into it (one request carries them all); if some arrived during the request itself, the series is sent once more.
A PATCH answered 404 (the Event expired) becomes a create; a create answered 409 AlreadyExists (an earlier attempt
succeeded but its answer was lost) becomes a PATCH. Transient errors (5xx, 429, network) are retried with jittered
exponential backoff, never sooner than the server's Retry-After, up to :data:`MAX_ATTEMPTS`; then the request is
dropped and counted. Everything is reported through :func:`poolboy.observability.observe_event`.

Events yield to reconciles: while this process runs a reconcile (:func:`foreground`, entered by the worker around
each run), a queued Event waits, at most :data:`HOLD_SECONDS` after it was recorded; the moment no run is left it
goes. In a burst the requests that report binds, their HTTP work and the API server's, would otherwise compete for
the same cores with the binds themselves (in W2-300, Events were three of a claim's nine API requests and a sixth of
the operator's CPU). A quiet process sends at once, and :func:`flush` sends without waiting.

Processes: the recorder is created lazily on the first Event *in the process that emits it*, so a Celery prefork
child builds its own after the fork and never uses its parent's threads (:func:`os.register_at_fork` forgets the
parent's recorder in the child, and the process id is checked as well). :func:`flush` waits until everything
queued has been sent or dropped; it runs at interpreter exit (``atexit``), when a worker child shuts down
(``workers/app.py``), and in tests before they read Events.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import tenacity

from poolboy.kube.events import Correlator, Series, event_body
from poolboy.observability import observe_event

log = logging.getLogger(__name__)

QUEUE_SIZE = 1000
#: sending threads: with 10 ms of API latency one thread sends about 85 Events/s, less than a burst of binds emits
SENDERS = 4
#: attempts per request before it is dropped (client-go makes 12, ten seconds apart)
MAX_ATTEMPTS = 8
BACKOFF_BASE = 0.2
BACKOFF_MAX = 10.0
#: how long a queued Event waits for this process's reconciles to finish before it is sent anyway
HOLD_SECONDS = 2.0
#: how long a clean exit waits for queued Events
EXIT_FLUSH_SECONDS = 5.0

SENT, AGGREGATED, DROPPED = "sent", "aggregated", "dropped"


class EventSink(Protocol):
    """Where Events go: :class:`poolboy.kube.KubeClient` (its errors carry ``status``, ``reason``, ``transient`` and
    ``retry_after``, which is all this module reads of them, so it does not import the client)."""

    def create(self, body: dict) -> dict: ...

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict) -> dict: ...


@dataclass
class _Item:
    sink: EventSink
    series: Series
    #: when the item is sent even while reconciles run (monotonic, the recorder's clock)
    due: float = 0.0


def _is_transient(error: BaseException) -> bool:
    return bool(getattr(error, "transient", False))


def _is_status(error: BaseException, status: int, reason: str | None = None) -> bool:
    return getattr(error, "status", None) == status and (reason is None or getattr(error, "reason", None) == reason)


Wait = Callable[[tenacity.RetryCallState], float]


class Recorder:
    """The queue, the correlator and the sending threads of one process. Thread-safe."""

    def __init__(self, correlator: Correlator | None = None, *, queue_size: int = QUEUE_SIZE, senders: int = SENDERS,
                 attempts: int = MAX_ATTEMPTS, backoff: Wait | None = None, hold: float = HOLD_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.pid = os.getpid()
        self.queue_size = queue_size
        self.senders = senders
        self.attempts = attempts
        self.hold = hold
        self._backoff: Wait = backoff or tenacity.wait_random_exponential(multiplier=BACKOFF_BASE, max=BACKOFF_MAX)
        self._clock = clock
        self._correlator = correlator or Correlator()
        self._queue: deque[_Item] = deque()
        self._busy = 0
        self._foreground = 0  # reconciles running in this process
        self._flushing = 0  # flush() callers waiting: nothing is held back for them
        self._timed = 0  # senders waiting for the head of the queue to fall due
        # one lock, two conditions: an Event wakes one sender (waking all four at every Event cost a few per cent of a
        # worker's CPU in a burst: each woken thread takes the GIL to find the queue empty), and only a sender that
        # leaves nothing queued or in flight wakes the flushers
        self._cond = threading.Lock()
        self._work = threading.Condition(self._cond)
        self._idle = threading.Condition(self._cond)
        self._threads: list[threading.Thread] = []
        # one policy for every send, made once (tenacity keeps each call's state per thread, so the senders share it)
        self._retrying = tenacity.Retrying(retry=tenacity.retry_if_exception(_is_transient),
                                           stop=tenacity.stop_after_attempt(attempts), wait=self._wait, reraise=True)

    # --- the emitting side (any thread; never blocks on the API) -----------------------------------------------

    def record(self, sink: EventSink, body: dict) -> None:
        """Count one occurrence of ``body`` and owe the API a request for it unless one is already owed."""
        outcome = self._enqueue(sink, body)
        if outcome is not None:
            observe_event(*outcome)

    def _enqueue(self, sink: EventSink, body: dict) -> tuple[str, str] | None:
        """None when a request was queued (its outcome is reported when it is sent), else what became of it."""
        with self._cond:
            now = self._clock()
            series = self._correlator.observe(body, now)
            if series.queued:
                return AGGREGATED, "coalesced"
            if not self._correlator.allow(series, now):
                return DROPPED, "spam"
            if len(self._queue) >= self.queue_size:
                log.warning("event queue full (%d): dropped %s %s", self.queue_size, body.get("reason"),
                            _describe(body))
                return DROPPED, "queue_full"
            series.queued = True
            self._queue.append(_Item(sink, series, now + self.hold))
            self._start_senders()
            if not self._timed or self._held_for() == 0.0:
                # a sender must send it, or learn when it falls due; one that waits for an earlier head already
                # will (waking a sender per Event in a burst costs CPU for nothing)
                self._work.notify()
        return None

    def _start_senders(self) -> None:
        """On the first Event of the process (so in a prefork child, after the fork). Several senders never work
        on one series at once: a series is in the queue at most once, and queued again only after its send."""
        while len(self._threads) < self.senders:
            thread = threading.Thread(target=self._run, name=f"poolboy-events-{len(self._threads)}", daemon=True)
            thread.start()
            self._threads.append(thread)

    # --- the reconciles it yields to -----------------------------------------------------------------------------

    def enter_foreground(self) -> None:
        with self._cond:
            self._foreground += 1

    def leave_foreground(self) -> None:
        with self._cond:
            self._foreground -= 1
            if not self._foreground and self._queue:
                self._work.notify(min(len(self._queue), self.senders))

    def _held_for(self) -> float | None:
        """Seconds the head of the queue must still wait (0: send it now; None: nothing queued). Under the lock."""
        if not self._queue:
            return None
        if not self._foreground or self._flushing:
            return 0.0
        return max(0.0, self._queue[0].due - self._clock())

    def pending(self) -> int:
        """Requests owed: queued or in flight."""
        with self._cond:
            return len(self._queue) + self._busy

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued Event has been sent or dropped; False if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flushing += 1
            self._work.notify(min(len(self._queue), self.senders))
            try:
                while self._queue or self._busy:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._idle.wait(remaining)
            finally:
                self._flushing -= 1
        return True

    # --- the sending threads -----------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while (held := self._held_for()) != 0.0:
                    # None: until an Event comes; else until the head falls due or the runs end
                    self._timed += held is not None
                    self._work.wait(held)
                    self._timed -= held is not None
                item = self._queue.popleft()
                self._busy += 1
            outcome = self._deliver(item)
            with self._cond:
                self._busy -= 1
                if outcome[0] == SENT and item.series.unsent:
                    item.due = self._clock()  # occurrences arrived during the request: one more send carries them
                    self._queue.append(item)
                else:
                    item.series.queued = False
                if not self._queue and not self._busy:
                    self._idle.notify_all()
            observe_event(*outcome)

    def _deliver(self, item: _Item) -> tuple[str, str]:
        try:
            return SENT, self._retrying(self._send, item)
        except Exception as error:
            series = item.series
            log.warning("dropped Event %s about %s: %s", series.body.get("reason"), _describe(series.body), error)
            return DROPPED, "error"

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """The jittered backoff, but never sooner than the server asked (429/503 Retry-After), within the cap."""
        chosen = self._backoff(state)
        error = state.outcome.exception() if state.outcome is not None else None
        retry_after = getattr(error, "retry_after", None)
        return max(chosen, min(float(retry_after), BACKOFF_MAX)) if retry_after else chosen

    def _send(self, item: _Item) -> str:
        """One attempt: PATCH a series the server has, POST one it has not. Returns the verb that succeeded."""
        series = item.series
        with self._cond:
            created, count, body, patch = series.created, series.count, series.create_body(), series.patch()
        verb = "patch" if created else "create"
        try:
            if created:
                self._patch(item, patch)
            else:
                item.sink.create(body)
        except Exception as error:
            if created and _is_status(error, 404):
                item.sink.create(body)  # the Event expired or was deleted: start it again under the same name
                verb = "create"
            elif not created and _is_status(error, 409, "AlreadyExists"):
                self._patch(item, patch)  # an earlier attempt created it; its answer was lost
                verb = "patch"
            else:
                raise
        with self._cond:
            series.created = True
            series.sent_count = count
        return verb

    def _patch(self, item: _Item, patch: dict) -> None:
        item.sink.patch_merge("v1", "Event", item.series.name, item.series.namespace, patch)


def _describe(body: dict) -> str:
    involved = body.get("involvedObject") or {}
    where = "/".join(str(part) for part in (involved.get("namespace"), involved.get("name")) if part)
    return f"{involved.get('kind')} {where}"


class ApiEventRecorder:
    """:class:`~poolboy.kube.interfaces.EventRecorder` sending to ``sink`` through this process's recorder; a
    cluster-scoped object's Events go to ``default_namespace`` (Events live in a namespace)."""

    def __init__(self, sink: EventSink, default_namespace: str, component: str = "poolboy") -> None:
        self.sink = sink
        self.default_namespace = default_namespace
        self.component = component

    def emit(self, obj: dict, reason: str, message: str, *, type: str = "Normal", action: str | None = None) -> None:
        """Record a core/v1 Event about ``obj`` without waiting for the API, aggregated as client-go does. Never
        raises: an Event is worth less than the reconcile."""
        try:
            record(self.sink, event_body(obj, reason, message, type=type, action=action, component=self.component,
                                         default_namespace=self.default_namespace))
        except Exception as error:
            log.warning("could not emit event %s for %s/%s: %s", reason, obj.get("kind"),
                        (obj.get("metadata") or {}).get("name"), error)


# --- the process's recorder --------------------------------------------------------------------------------------

_lock = threading.Lock()
_current: Recorder | None = None


def recorder() -> Recorder:
    """This process's recorder, created on first use (so after a fork, in the child)."""
    global _current
    current = _current
    if current is not None and current.pid == os.getpid():
        return current
    with _lock:
        if _current is None or _current.pid != os.getpid():
            _current = Recorder()
        return _current


def record(sink: EventSink, body: dict) -> None:
    """Record an Event without waiting for the API (see the module docstring)."""
    recorder().record(sink, body)


@contextmanager
def foreground() -> Iterator[None]:
    """Around a reconcile: this process's Events wait until no reconcile runs, at most :data:`HOLD_SECONDS`."""
    current = recorder()
    current.enter_foreground()
    try:
        yield
    finally:
        current.leave_foreground()


def flush(timeout: float | None = 10.0) -> bool:
    """Wait until this process's queued Events are sent or dropped; False on timeout. True when there are none."""
    current = _current
    if current is None or current.pid != os.getpid():
        return True
    return current.flush(timeout)


def _forget_in_child() -> None:
    """After a fork the child must not touch the parent's queue, lock or (absent) threads: start afresh."""
    global _current, _lock
    _current = None
    _lock = threading.Lock()


def _flush_at_exit() -> None:
    if not flush(EXIT_FLUSH_SECONDS):
        log.warning("exiting with %d Event request(s) unsent", _current.pending() if _current else 0)


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_flush_at_exit)

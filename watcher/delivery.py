"""The watcher's event path: a watch event, the keys it wakes, and their way to Redis in batches.

:class:`EventDelivery` is the whole path from an informer's callback to the intake: the event's route
(:data:`watcher.mapping.ROUTES`, the table from watched kind to the keys it wakes) names the keys, the event goes on
its source's :class:`DeliveryBuffer`, and the queue's thread hands whatever queued up to the intake
(:class:`engine.enqueue.EventIntake`: the cache write, the own-write check and the work queue's ADD of every key in one
round trip), retried while Redis is away.

Why batches: each informer handed its events on one at a time, each one Redis round trip. A stream then carried at
most one event per round trip, about 500 a second with Redis a millisecond away, and the watcher is the one
component that does not scale out. Informers now put their events on their source's queue and go back to their
streams; the queue's thread takes whatever has queued (at most ``max_batch``) and delivers it in one round trip. A
quiet watcher still delivers each event alone and at once; a busy one delivers in fewer, larger round trips. One
queue per watched source (the watcher's routes), so that a busy stream (handles while a pool refills) does not hold
up another (claims).

What batching keeps:

- **Order.** A FIFO per source, delivered in order (each script on the pipeline is still atomic on its
  own, and runs in queue order).
- **Nothing lost.** The deliverer retries a failed batch whole (every step is idempotent), and a full queue blocks
  the informers: back-pressure, which the health probe reports.
- **Relists.** A relist prunes the cache only after what was queued before it is delivered (:meth:`drain`), so an
  older event cannot put back an object the list no longer has.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from engine import redis_oom
from engine.enqueue import Wakes
from poolboy.observability import labelled
from poolboy.settings import Settings
from poolboy.utils.backoff import Backoff
from watcher import mapping, metrics

if TYPE_CHECKING:
    from cache.writer import CacheWriter
    from watcher.informer import Informer, ListCallback

log = logging.getLogger(__name__)

T = TypeVar("T")

#: events one round trip carries at most (each is a cache write and an OBSERVE per woken key)
MAX_BATCH = 256
#: events queued before an informer waits for the deliverer: four round trips' worth keeps a stream read while one is
#: in flight; more would only hold more objects in memory (a stream held one at a time before)
MAX_QUEUED = 1024


class DeliveryBuffer(Generic[T]):
    """``submit(item)`` from any thread; ``deliver(batch)`` runs in the queue's own thread, batches in order."""

    def __init__(self, deliver: Callable[[list[T]], None], *, max_batch: int = MAX_BATCH,
                 max_queued: int = MAX_QUEUED, name: str = "event delivery") -> None:
        self._deliver = deliver
        self.max_batch = max_batch
        self.max_queued = max_queued
        self.name = name
        self._items: deque[T] = deque()
        self._lock = threading.Lock()
        # three conditions on one lock (as queue.Queue has), so that each change wakes only who waits for it
        self._not_empty = threading.Condition(self._lock)  # the deliverer
        self._not_full = threading.Condition(self._lock)  # informers on a full queue
        self._progress = threading.Condition(self._lock)  # drains
        self._submitted = 0
        self._finished = 0  # delivered or dropped
        self._stopped = False
        self._thread: threading.Thread | None = None
        #: monotonic time at which the batch in hand began (None when idle): a delivery that never ends (Redis
        #: away) is what the watcher's health probe reports
        self.busy_since: float | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stopped

    @property
    def alive(self) -> bool:
        """The thread runs (or was never started)."""
        return self._thread is None or self._thread.is_alive()

    def start(self) -> DeliveryBuffer[T]:
        with self._lock:
            if self._thread is None:
                self._stopped = False
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the batch in hand; what is still queued is dropped."""
        with self._lock:
            self._stopped = True
            self._drop()
            self._not_empty.notify_all()

    def clear(self) -> int:
        """Drop what is queued (the watcher lost its lease: the next leader lists everything); how many."""
        with self._lock:
            return self._drop()

    def submit(self, item: T) -> None:
        """Queue ``item``; waits while the queue is full. Dropped at once when the queue is stopped."""
        with self._lock:
            while len(self._items) >= self.max_queued and not self._stopped:
                self._not_full.wait(0.5)
            if self._stopped:
                return
            self._items.append(item)
            self._submitted += 1
            self._not_empty.notify()

    def drain(self) -> None:
        """Wait until everything submitted so far is delivered (or dropped)."""
        with self._lock:
            target = self._submitted
            while self._finished < target and not self._stopped:
                self._progress.wait(0.5)

    def pending(self) -> int:
        """Submitted and not yet delivered (queued or in hand)."""
        with self._lock:
            return self._submitted - self._finished

    def _drop(self) -> int:
        dropped = len(self._items)
        self._items.clear()
        self._finished += dropped
        self._not_full.notify_all()
        self._progress.notify_all()
        return dropped

    def _take(self) -> list[T] | None:
        with self._lock:
            while not self._items and not self._stopped:
                self._not_empty.wait()
            if self._stopped:
                return None
            batch = [self._items.popleft() for _ in range(min(len(self._items), self.max_batch))]
            self._not_full.notify_all()  # room for informers waiting on a full queue
            return batch

    def _run(self) -> None:
        while (batch := self._take()) is not None:
            self.busy_since = time.monotonic()
            try:
                self._deliver(batch)
            except Exception:  # the deliverer retries what can be retried; anything else must not end the thread
                log.exception("%s: delivering %d events failed; they are dropped", self.name, len(batch))
            finally:
                self.busy_since = None
                with self._lock:
                    self._finished += len(batch)
                    self._progress.notify_all()


#: one event on its way: (event type, object, the keys it wakes)
Event = tuple[str, dict, Wakes]


class Intake(Protocol):
    def deliver_many(self, events: Sequence[Event]) -> list[list[str]]:
        """Write each event into the cache and hand each key it wakes to the work queue, in order, in one round trip;
        the work queue's outcome per key of each event (:data:`workqueue.queue.ADD_OUTCOMES`). Raises when Redis cannot
        be reached (the watcher retries the whole delivery, which is idempotent)."""
        ...


class EventDelivery:
    """``on_event(route, event_type, obj)`` from an informer: the event to the ``intake``, through its route's
    :class:`DeliveryBuffer`.

    The queues run between :meth:`start` and :meth:`stop` (the watcher starts them before its informers); ``cache``
    is the writer a (re)list fills and prunes (:meth:`list_callback`), None without a read cache.
    ``observe(event_type, obj)`` sees every event of a Poolboy kind first (the watcher's metrics); ``watching()``
    says whether the watcher still holds its lease, ``stopping`` whether it is shutting down: a failed delivery is
    retried until either says to give up.
    """

    def __init__(self, settings: Settings, *, intake: Intake, cache: CacheWriter | None,
                 observe: Callable[[str, dict], None], watching: Callable[[], bool],
                 stopping: threading.Event) -> None:
        self.settings = settings
        self.intake = intake
        self.cache = cache
        self.observe = observe
        self.watching = watching
        self.stopping = stopping
        #: one queue per watched source, so that a busy stream does not hold up another
        self.queues: dict[mapping.Route, DeliveryBuffer[Event]] = {
            route: DeliveryBuffer(self._deliver_batch, name=f"event delivery ({route.kind or 'managed'})")
            for route in mapping.ROUTES}
        metrics.DELIVERY_QUEUED.set_function(self.pending)

    def start(self) -> None:
        for queue in self.queues.values():
            queue.start()

    def stop(self) -> None:
        for queue in self.queues.values():
            queue.stop()

    def clear(self) -> None:
        """Drop what is queued (the lease was lost: the next leader lists everything)."""
        for queue in self.queues.values():
            queue.clear()

    def pending(self) -> int:
        return sum(queue.pending() for queue in self.queues.values())

    def on_event(self, route: mapping.Route, event_type: str, obj: dict) -> None:
        """One event of ``route``'s source: first to the watcher's own bookkeeping, then onto the route's queue with
        the keys the route wakes (the intake writes the cache before it hands them to the work queue)."""
        if route.poolboy:
            self.observe(event_type, obj)
        wakes: Wakes = [(key, mapping.write_id(event_type, obj)) for key in route.keys(obj, self.settings)]
        self.queues[route].submit((event_type, obj, wakes))

    def list_callback(self, route: mapping.Route) -> ListCallback | None:
        """What a (re)list of ``route``'s source calls: fills and prunes the cache (None: no cache)."""
        return partial(self._on_list, route) if self.cache is not None else None

    def _on_list(self, route: mapping.Route, informer: Informer, items: list) -> None:
        """A (re)list fills and prunes the cache once the events of its source queued before it are in
        (:meth:`DeliveryBuffer.drain`): an older event delivered after the prune would put back an object the list
        no longer has."""
        assert self.cache is not None
        self.queues[route].drain()
        self.cache.on_list(informer, items)

    def _deliver_batch(self, batch: list[Event]) -> None:
        """The delivery thread's work: the events that queued up, in one round trip, retried while Redis is away."""
        if not self.watching():
            return  # the lease was lost meanwhile: the next leader lists everything
        metrics.DELIVERY_BATCH.observe(len(batch))

        def deliver() -> None:
            for (_, _, wakes), outcomes in zip(batch, self.intake.deliver_many(batch), strict=True):
                _count(wakes, outcomes)

        self._retrying(deliver, f"{len(batch)} events" if len(batch) > 1 else _wakes_text(batch[0][2]))

    def _retrying(self, deliver: Callable[[], None], what: str) -> None:
        """Deliver, retrying while it fails (e.g. Redis down): dropping it would lose the change.

        Blocking here stalls only this source's queue; once it is full, its informer waits (the health probe reports
        both), and if that lasts, the API server ends the watch and the re-list afterwards delivers the current
        state anyway.
        """
        backoff = Backoff(base=0.1, cap=5.0)
        while True:
            try:
                deliver()
                return
            except Exception as error:
                metrics.SINK_ERRORS.inc()
                if self.stopping.is_set() or not self.watching():
                    log.warning("dropping %s after a failed delivery while stopping: %s", what, error)
                    return
                delay = backoff.next_delay()
                if redis_oom.is_oom(error):
                    redis_oom.report(log, f"delivery of {what} is retried (every {delay:.1f}s at most)", error)
                else:
                    log.warning("delivery of %s failed (%s); retrying in %.1fs", what, error, delay)
                self.stopping.wait(delay)


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

"""Watch events on their way to Redis in batches: one round trip for every event that queued up meanwhile.

Why: each informer handed its events on one at a time, each one Redis round trip (the cache write, the own-write
check and the gate's ADD on one pipeline: :mod:`workers.intake`). A stream then carried at most one event per round
trip, about 500 a second with Redis a millisecond away, and the watcher is the one component that does not scale
out. Informers now put their events on their source's queue and go back to their streams; the queue's thread takes
whatever has queued (at most ``max_batch``) and delivers it in one round trip. A quiet watcher still delivers each
event alone and at once; a busy one delivers in fewer, larger round trips. One queue per watched source (the
watcher's routes), so that a busy stream (handles while a pool refills) does not hold up another (claims).

What stays as it was:

- **Order.** A FIFO per source, delivered in order (each script on the pipeline is still atomic on its
  own, and runs in queue order).
- **Nothing lost.** The deliverer retries a failed batch whole (every step is idempotent), and a full queue blocks
  the informers: the back-pressure a blocked delivery used to be, which the health probe reports as before.
- **Relists.** A relist prunes the cache only after what was queued before it is delivered (:meth:`drain`), so an
  older event cannot put back an object the list no longer has.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

#: events one round trip carries at most (each is a cache write and an OBSERVE per woken key)
MAX_BATCH = 256
#: events queued before an informer waits for the deliverer: four round trips' worth keeps a stream read while one is
#: in flight; more would only hold more objects in memory (a stream held one at a time before)
MAX_QUEUED = 1024


class DeliveryQueue(Generic[T]):
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

    def start(self) -> DeliveryQueue[T]:
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

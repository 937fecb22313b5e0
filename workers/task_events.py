"""Task events in batches: the worker's Celery consumer flushes its buffered task events at most every
:data:`FLUSH_INTERVAL_S`, not once per turn of its event loop.

Why: Flower (and ``celery events``) learn what a worker does from the ``task-received``, ``task-started`` and
``task-succeeded`` events it sends. Celery buffers them per group and publishes the buffer as one ``task.multi``
message, but schedules that flush for the very next turn of the event loop, so under load almost every event costs
its own ``PUBLISH`` and its own kombu publish: 2.6 of a reconcile's 3 events, about 8 of the ~180 Redis commands a
cold claim costs, and a kombu publish per event in the worker's CPU. Waiting up to a quarter of a second lets a busy
worker send one message for a whole batch (Celery still flushes at once when a batch reaches the dispatcher's
``buffer_limit``); a monitor sees each event at most that much later, with its own timestamp, and an idle worker's
single events go out as before.

Selected by Celery's ``worker_consumer`` setting (:mod:`workers.config`).
"""

from __future__ import annotations

import time
from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer

#: the longest a buffered task event waits for company before it is published
FLUSH_INTERVAL_S = 0.25


class Consumer(CeleryConsumer):
    """Celery's worker consumer, flushing buffered task events on a timer of the event loop (the hub)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._events_flushed_at = 0.0
        #: when the flush on the hub's timer is due (None: none is); a timer the hub dropped (a reconnection clears
        #: it) is given up an interval after it was due, so events never wait for a flush that will not come
        self._events_flush_due: float | None = None

    def _flush_events(self) -> None:
        """Runs in the hub's thread (Celery calls it through ``hub.call_soon``): publish now if the last batch went
        out long enough ago, else once, at the end of the interval."""
        now = time.monotonic()
        due = self._events_flush_due
        if due is not None and now < due + FLUSH_INTERVAL_S:
            return  # a flush is on the hub's timer; these events go with it
        wait = self._events_flushed_at + FLUSH_INTERVAL_S - now
        if wait > 0 and self.hub is not None:
            self._events_flush_due = now + wait
            self.hub.call_later(wait, self._flush_events_now)
            return
        self._flush_events_now()

    def _flush_events_now(self) -> None:
        self._events_flush_due = None
        self._events_flushed_at = time.monotonic()
        super()._flush_events()

    def shutdown(self) -> None:
        """The batch waiting for its timer goes out before the event dispatcher closes."""
        self._flush_events_now()
        super().shutdown()

"""The way into the work queue: :class:`Enqueuer` adds keys and publishes the runs the queue says are owed;
:class:`EventIntake` is the watcher's way in.

The queue decides whether a message is needed at all (most events of a burst coalesce); only then is a run's
message sent, with the queue's message id as task id and the priority class mapped to a message priority (events
before resync). Given the messaging adapter's encoder (:class:`workers.messages.QueuedMessages`), the queue's scripts
push the message themselves; the runs they did not push go to its :class:`Publisher`
(:class:`workers.messages.CeleryPublisher`). The engine knows neither Celery nor its task and queue names.

**The watcher's intake: one Redis round trip per watch event, or per batch of them.** An event needs two steps per
key it wakes, in this order: the object goes into the shared cache (:mod:`cache.store`) first, so the run it causes
reads at least this version; then the key's OBSERVE (:mod:`engine.own_writes`): the key's own write is skipped, an
event during a run of the key is deferred to that run, anything else is ADDed. A failed cache write only costs
speed (it is counted and logged); a failed OBSERVE falls back to a plain ADD, because an extra run is cheap and a
lost change is not. If Redis cannot be reached, :meth:`EventIntake.deliver_many` raises and the watcher delivers the
events again (every step is idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engine import metrics, redis_oom
from engine.own_writes import OwnWrites
from poolboy.observability import labelled
from redisscripts import Call
from workqueue.queue import Added, Publish, WorkQueue
from workqueue.roundtrip import Reply, RoundTrip

if TYPE_CHECKING:
    from cache.writer import CacheWriter

log = logging.getLogger(__name__)


class Publisher(Protocol):
    """Sends the reconcile messages of runs the queue owes and its scripts did not push themselves: the messaging
    adapter's side of the engine (:class:`workers.messages.CeleryPublisher`), so that the engine sends runs
    without knowing how they travel."""

    def publish(self, publishes: Sequence[Publish]) -> None:
        """One message per run, each with the run's message id as task id and its priority."""


class Enqueuer:
    """``Enqueuer(queue, publisher).add(key, "event")`` -> 'published' | 'coalesced' | 'pending-while-running'."""

    def __init__(self, queue: WorkQueue, publisher: Publisher) -> None:
        self.queue = queue
        self.publisher = publisher

    def add(self, key: str, priority: str = "event") -> str:
        """Tell the queue ``key`` needs a run; publish a message only when the queue says so."""
        return self.settle([self.queue.add(key, priority)])[0]

    def add_many(self, keys: Iterable[str], priority: str = "event") -> list[str]:
        """``add`` for many keys: one round trip to the queue, one publish of the runs it owes."""
        return self.settle(self.queue.add_many(keys, priority))

    def settle(self, results: Sequence[Added]) -> list[str]:
        """Count what the queue answered to ADDs and publish the runs its scripts did not push themselves."""
        for added in results:
            labelled(metrics.WORKQUEUE_ADDS, added.outcome).inc()
        self.publish_many([added.unpublished for added in results if added.unpublished])
        return [added.outcome for added in results]

    def publish_many(self, publishes: Sequence[Publish | None]) -> None:
        """Hand the publisher the runs to send (but those the queue has pushed itself)."""
        todo = [publish for publish in publishes if publish is not None and not publish.queued]
        if todo:
            self.publisher.publish(todo)


#: the keys one event wakes, each with the event's write id (:func:`watcher.mapping.write_id`, None: not a candidate
#: for an own write)
Wakes = list[tuple[str, "str | None"]]


class EventIntake:
    """``EventIntake(enqueuer, own_writes, cache).deliver_many([(event_type, obj, wakes), ...])`` -> the queue's
    outcome per woken key (the watcher's :class:`watcher.delivery.Intake`)."""

    def __init__(self, enqueuer: Enqueuer, own_writes: OwnWrites, cache: CacheWriter | None = None) -> None:
        self.enqueuer = enqueuer
        self.own_writes = own_writes
        self.cache = cache

    def deliver_many(self, events: Sequence[tuple[str, dict, Wakes]]) -> list[list[str]]:
        """Each event's cache write, then the OBSERVE of each key it wakes, for all events in one round trip, in
        event order, so each event's cache write precedes the keys it wakes."""
        trip = RoundTrip(self.enqueuer.queue.redis)
        written: list[tuple[str, dict, Reply | None]] = []
        observed: list[list[tuple[str, Reply[Added]]]] = []
        for event_type, obj, wakes in events:
            cache_call = self._cache_call(event_type, obj)
            written.append((event_type, obj, trip.call(cache_call) if cache_call is not None else None))
            observed.append([(key, trip.call(self.own_writes.observe_call(key, write_id))) for key, write_id in wakes])
        if len(trip):
            trip.send()  # raises if Redis is away
        for event_type, obj, reply in written:
            if reply is not None and self.cache is not None:
                self.cache.event_written(event_type, obj, reply.error)
        results = [[self._outcome(key, reply) for key, reply in replies] for replies in observed]
        self.enqueuer.publish_many([added.unpublished for outcomes in results for added in outcomes])
        return [[added.outcome for added in outcomes] for outcomes in results]

    def _cache_call(self, event_type: str, obj: dict) -> Call[Any] | None:
        """The event's cache write, or None: no cache, nothing to write, or an object the cache cannot hold (e.g.
        nested deeper than its JSON encoder goes), which must not keep the event's keys from the queue."""
        if self.cache is None:
            return None
        try:
            call = self.cache.event_call(event_type, obj)
        except Exception as error:
            self.cache.event_written(event_type, obj, error)
            return None
        return call

    def _outcome(self, key: str, reply: Reply[Added]) -> Added:
        if reply.error is not None:  # the script failed: add the key as if nothing were known (raises if Redis is
            # away, and the watcher delivers the event again)
            if redis_oom.is_oom(reply.error):
                redis_oom.report(log, f"the own-write check for {key} is skipped", reply.error)
            else:
                log.warning("own-write check for %s failed (%s); adding the key", key, reply.error)
            metrics.OWN_WRITE_CHECK_ERRORS.inc()
            added = self.enqueuer.queue.add(key)
        else:
            added = reply.value
        labelled(metrics.WORKQUEUE_ADDS, added.outcome).inc()
        return added


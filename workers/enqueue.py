"""Publishing side of the gate: ``Enqueuer.add(key)`` is what beat and reconcile tasks call, ``GateIntake`` the
watcher's way in.

The gate decides whether a message is needed at all (most events of a burst coalesce); only then is a
``poolboy.reconcile.<kind>`` message published on the kind's queue, with the gate's message id as task id and the
priority class mapped to a Redis message priority (events before resync).

**The watcher's intake: one Redis round trip per watch event, or per batch of them.** An event needs three steps
before its key's message is published: the cache write, the own-write check, the gate's ADD. :class:`GateIntake`
sends them as parts of one script (:func:`workers.scripting.evalsha_combined`: one
EVALSHA, not one per part), in that order: the object goes into the shared cache (:mod:`cache.store`) before any
key it wakes is marked, so the run it causes reads at least this version; then, per woken key, the gate's OBSERVE
(:mod:`workers.own_writes` and :mod:`workers.gate`): the key's own write is skipped, an event during a run of the key
is deferred to that run, anything else is ADDed. The keys the gate says to publish are then published on one
producer connection (:meth:`Enqueuer.publish_many`).

Running them together changes no decision, only the number of round trips and of Redis commands. A failed cache
write only costs speed (it is counted and logged); a failed OBSERVE falls back to a plain ADD, because an extra run is
cheap and a lost change is not. If Redis cannot be reached, :meth:`GateIntake.deliver` raises and the watcher
delivers the whole event again (every step is idempotent). The events that queue up while a round trip is under way
go together in the next (:meth:`GateIntake.deliver_many`, :mod:`watcher.delivery`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from poolboy.observability import labelled
from poolboy.settings import Settings
from workers import metrics
from workers.gate import Gate, Publish
from workers.messages import QueuedMessages
from workers.names import route
from workers.scripting import evalsha_combined

if TYPE_CHECKING:
    from celery import Celery

    from cache.writer import CacheWriter

log = logging.getLogger(__name__)


class Enqueuer:
    """``Enqueuer(settings, app).add(key, "event")`` -> 'published' | 'coalesced' | 'pending-while-running'.

    ``app`` is the Celery app whose messages it sends (``workers.app.app`` for the operator), given rather than
    imported so that the engine's modules do not depend on the app module."""

    def __init__(self, settings: Settings, app: Celery, gate: Gate | None = None) -> None:
        self.settings = settings
        self.app = app
        self.gate = gate or Gate.from_settings(self.settings)
        self.gate.encoder = QueuedMessages(app).encode  # the gate pushes the messages it decides are owed

    def add(self, key: str, priority: str = "event") -> str:
        """Tell the gate ``key`` needs a run; publish a message only when the gate says so."""
        return self.settle([self.gate.add(key, priority)])[0]

    def add_many(self, keys: Iterable[str], priority: str = "event", countdown: float | None = None) -> list[str]:
        """``add`` for many keys: one pipelined round trip to the gate, one producer connection for publishing.

        With ``countdown`` (a few seconds at most: an ETA message is held by a worker, see docs/behaviour.md#delivery)
        the run starts that much later, and adds meanwhile coalesce into it: a burst of them costs the key one run."""
        return self.settle(self.gate.add_many(keys, priority, push=countdown is None),  # a countdown is Celery's
                           countdown)

    def settle(self, results: Sequence[tuple[str, Publish | None]], countdown: float | None = None) -> list[str]:
        """Count what the gate answered to ADDs and publish the runs its scripts did not push themselves."""
        for outcome, _ in results:
            labelled(metrics.GATE_ADDS, outcome).inc()
        self.publish_many([publish for _, publish in results if publish], countdown=countdown)
        return [outcome for outcome, _ in results]

    def publish_many(self, publishes: list[Publish], countdown: float | None = None) -> None:
        """:meth:`publish` for each, on one producer connection (but those the gate has pushed itself)."""
        publishes = [publish for publish in publishes if not publish.queued]
        if len(publishes) == 1:
            self.publish(publishes[0], countdown=countdown)
        elif publishes:
            with self.app.producer_or_acquire() as producer:
                for publish in publishes:
                    self.publish(publish, countdown=countdown, producer=producer)

    def publish(self, publish: Publish, countdown: float | None = None, producer: object = None) -> None:
        """Send one reconcile message exactly as the gate asked (task id = the gate's message id)."""
        task, queue = route(publish.key)
        self.app.send_task(task, args=[publish.key], task_id=publish.msg_id, queue=queue,
                           priority=publish.priority, countdown=countdown, producer=producer)


#: the keys one event wakes, each with the event's write id (as :data:`watcher.delivery.Wakes`)
Wakes = list[tuple[str, "str | None"]]


class GateIntake:
    """``GateIntake(enqueuer, cache).deliver(event_type, obj, [(key, write_id), ...])`` -> the gate's outcome per
    key (the watcher's :class:`watcher.delivery.Intake`)."""

    def __init__(self, enqueuer: Enqueuer, cache: CacheWriter | None = None) -> None:
        self.enqueuer = enqueuer
        self.gate = enqueuer.gate
        self.cache = cache

    def deliver(self, event_type: str, obj: dict, wakes: Wakes) -> list[str]:
        return self.deliver_many([(event_type, obj, wakes)])[0]

    def deliver_many(self, events: Sequence[tuple[str, dict, Wakes]]) -> list[list[str]]:
        """:meth:`deliver` for several events in one round trip (:mod:`watcher.delivery`): their scripts on one
        pipeline in event order, so each event's cache write still precedes the keys it wakes."""
        calls: list[Any] = []
        cached: list[bool] = []
        for event_type, obj, wakes in events:
            cache_call = self._cache_call(event_type, obj)
            if cache_call is not None:
                calls.append(cache_call)
            cached.append(cache_call is not None)
            calls += [self.gate.observe_call(key, write_id) for key, write_id in wakes]
        if not calls:
            return [[] for _ in events]
        replies = iter(evalsha_combined(self.gate.redis, calls, raise_on_error=False))  # raises if Redis is away
        results, to_publish = [], []
        for (event_type, obj, wakes), was_cached in zip(events, cached, strict=True):
            if was_cached:
                assert self.cache is not None
                reply = next(replies)
                self.cache.event_written(event_type, obj, reply if isinstance(reply, Exception) else None)
            outcomes = []
            for key, _ in wakes:
                outcome, publish = self._outcome(key, next(replies))
                outcomes.append(outcome)
                if publish is not None:
                    to_publish.append(publish)
            results.append(outcomes)
        self.enqueuer.publish_many(to_publish)
        return results

    def _cache_call(self, event_type: str, obj: dict) -> Any:
        """The event's cache write, or None: no cache, nothing to write, or an object the cache cannot hold (e.g.
        nested deeper than its JSON encoder goes), which must not keep the event's keys from the gate."""
        if self.cache is None:
            return None
        try:
            return self.cache.event_call(event_type, obj)
        except Exception as error:
            self.cache.event_written(event_type, obj, error)
            return None

    def _outcome(self, key: str, reply: Any) -> tuple[str, Publish | None]:
        if isinstance(reply, Exception):  # the script failed: add the key as if nothing were known (raises if Redis
            # is away, and the watcher delivers the event again)
            log.warning("own-write check for %s failed (%s); adding the key", key, reply)
            metrics.OWN_WRITE_CHECK_ERRORS.inc()
            outcome, publish = self.gate.add(key)
        else:
            outcome, publish = self.gate.add_result(key, reply)
        labelled(metrics.GATE_ADDS, outcome).inc()
        return outcome, publish


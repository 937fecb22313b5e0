"""The watcher's way into the gate: one Redis round trip per watch event.

An event used to cost the watcher three round trips before its key's message was published: the cache write, the
own-write check, the gate's ADD. Here they are scripts on one pipeline, in that order: the object goes into the
shared cache (:mod:`cache.store`) before any key it wakes is marked, so the run it causes reads at least this
version; then, per woken key, the gate's OBSERVE (:mod:`workers.own_writes` and :mod:`workers.gate`): the key's
own write is skipped, an event during a run of the key is deferred to that run, anything else is ADDed. The keys
the gate says to publish are then published on one producer connection.

Each script stays atomic on its own, so the pipeline changes no decision, only the number of round trips.
A failed cache write only costs speed (it is counted and logged); a failed OBSERVE falls back to a plain ADD,
because an extra run is cheap and a lost change is not. If Redis cannot be reached, :meth:`GateIntake.deliver`
raises and the watcher delivers the whole event again (every step is idempotent).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from poolboy.observability import labelled
from workers import metrics
from workers.enqueue import Enqueuer
from workers.gate import Publish, evalsha_pipelined

if TYPE_CHECKING:
    from cache.writer import CacheWriter

log = logging.getLogger(__name__)


class GateIntake:
    """``GateIntake(enqueuer, cache).deliver(event_type, obj, [(key, write_id), ...])`` -> the gate's outcome per
    key (the watcher's :class:`watcher.main.Intake`)."""

    def __init__(self, enqueuer: Enqueuer, cache: CacheWriter | None = None) -> None:
        self.enqueuer = enqueuer
        self.gate = enqueuer.gate
        self.cache = cache

    def deliver(self, event_type: str, obj: dict, wakes: list[tuple[str, str | None]]) -> list[str]:
        cache_call = self._cache_call(event_type, obj)
        calls: list[Any] = [cache_call] if cache_call is not None else []
        calls += [self.gate.observe_call(key, write_id) for key, write_id in wakes]
        if not calls:
            return []
        replies = evalsha_pipelined(self.gate.redis, calls, raise_on_error=False)  # raises if Redis is away
        if cache_call is not None:
            assert self.cache is not None
            reply, replies = replies[0], replies[1:]
            self.cache.event_written(event_type, obj, reply if isinstance(reply, Exception) else None)
        outcomes, to_publish = [], []
        for (key, _), reply in zip(wakes, replies, strict=True):
            outcome, publish = self._outcome(key, reply)
            outcomes.append(outcome)
            if publish is not None:
                to_publish.append(publish)
        self._publish(to_publish)
        return outcomes

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

    def _publish(self, publishes: list[Publish]) -> None:
        self.enqueuer.publish_many(publishes)

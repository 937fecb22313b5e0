"""Publishing side of the gate: ``Enqueuer.add(key)`` is what the watcher, beat and reconcile tasks call.

The gate decides whether a message is needed at all (most events of a burst coalesce); only then is a
``poolboy.reconcile.<kind>`` message published on the kind's queue, with the gate's message id as task id and the
priority class mapped to a Redis message priority (events before resync).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from poolboy.observability import labelled
from poolboy.settings import Settings
from workers import metrics
from workers.gate import Gate, Publish
from workers.messages import QueuedMessages
from workers.names import route

if TYPE_CHECKING:
    from celery import Celery


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

"""The delaying queue's clock, in every worker: a few times a second, the keys whose time came
(:mod:`workqueue.delaying`) and those whose run died without releasing them (expired leases) go back into the work
queue — client-go's ``waitingLoop``, as a Celery worker bootstep on the worker's own timer.

Every worker runs it, so a retry waits for no single process: a killed worker's retries run on the next tick of any
other. It sends no task, so at rest nothing shows in Flower; what it releases shows as the reconciles it causes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import bootsteps

from engine import metrics
from engine.enqueue import Enqueuer
from poolboy.settings import Settings
from workqueue.delaying import DelayingQueue

if TYPE_CHECKING:
    from workers.operator_app import OperatorApp

log = logging.getLogger(__name__)


class Pump:
    """One tick: expired leases' keys published again, then the due keys added."""

    def __init__(self, settings: Settings, enqueuer: Enqueuer) -> None:
        self.batch = settings.sweep_due_batch
        self.enqueuer = enqueuer
        self.delaying = DelayingQueue(enqueuer.queue)

    def tick(self) -> tuple[int, int]:
        """(keys re-run after their lease expired, keys released from the delaying queue)."""
        reaped = self.enqueuer.queue.reap(self.batch)
        for publish in reaped:
            log.warning("%s: lease expired without DONE (worker died?); re-publishing", publish.key)
        self.enqueuer.publish_many(reaped)
        metrics.WORKQUEUE_REAPED.inc(len(reaped))
        return len(reaped), len(self.enqueuer.settle(self.delaying.release_due(limit=self.batch)))


class PumpStep(bootsteps.StartStopStep):
    """``app.steps["worker"].add(PumpStep)``: the pump on the worker's timer, every ``sweep_due_interval``."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.timer_ref: Any = None
        self.pump: Pump | None = None

    def start(self, worker: Any) -> None:
        """Pump through the worker's own app (an :class:`~workers.operator_app.OperatorApp`), with its settings."""
        from workers.messages import enqueuer

        app: OperatorApp = worker.app
        self.pump = Pump(app.settings, enqueuer(app, app.settings))
        self.timer_ref = worker.timer.call_repeatedly(app.settings.sweep_due_interval, self._tick, priority=10)

    def stop(self, worker: Any) -> None:
        if self.timer_ref is not None:
            self.timer_ref.cancel()
            self.timer_ref = None

    def _tick(self) -> None:
        try:
            if self.pump is not None:
                self.pump.tick()
        except Exception as error:  # Redis away: the next tick tries again
            log.debug("delaying queue: %s", error)

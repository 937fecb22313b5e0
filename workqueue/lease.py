"""A run's lease, kept renewed while the run goes on (:meth:`workqueue.queue.WorkQueue.renew`)."""

from __future__ import annotations

import logging
import threading

import redis

from workqueue.queue import WorkQueue

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Keeps a run's lease renewed every lease/3 while the block runs, up to ``time_limit`` seconds; ``lost`` is set
    when a renewal fails or the run outlives its limit.

    A reconcile that sees ``lost`` should stop writing and finish: another run may already hold the key (the API
    server's resourceVersion preconditions remain the real safety net). The renewals of every run of a process are
    made by one daemon thread per process (:class:`Renewer`): nearly every run ends long before its first renewal
    is due, so a thread per run would be started and joined for nothing.
    """

    def __init__(self, renewer: Renewer, key: str, token: str, time_limit: float | None = None) -> None:
        self.renewer, self.key, self.token = renewer, key, token
        self.time_limit = time_limit
        self.started = renewer.clock.monotonic()
        self.lost = threading.Event()
        self.due = 0.0  # monotonic time of the next renewal (the renewer's bookkeeping)

    def __enter__(self) -> LeaseKeeper:
        self.renewer.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.renewer.remove(self)


class Renewer:
    """One daemon thread renewing the leases of the runs in progress in this process, started by the first run; its
    deadlines and the runs' time limits are read on the queue's clock."""

    def __init__(self, queue: WorkQueue) -> None:
        self.queue = queue
        self.clock = queue.clock
        self.interval = queue.lease_seconds / 3
        self.keepers: set[LeaseKeeper] = set()
        self.changed = threading.Condition()
        self.thread: threading.Thread | None = None

    def add(self, keeper: LeaseKeeper) -> None:
        """No need to wake the thread: it never sleeps longer than one interval, and a new keeper is due one
        interval from now, no earlier than any other (waking it per run cost a GIL hand-over for nothing)."""
        keeper.due = self.clock.monotonic() + self.interval
        with self.changed:
            self.keepers.add(keeper)
            if self.thread is None or not self.thread.is_alive():  # first use, or after a fork
                self.thread = threading.Thread(target=self._run, name="lease renewer", daemon=True)
                self.thread.start()

    def remove(self, keeper: LeaseKeeper) -> None:
        with self.changed:
            self.keepers.discard(keeper)

    def _run(self) -> None:
        while True:
            with self.changed:
                now = self.clock.monotonic()
                due = [k for k in self.keepers if k.due <= now]
                if not due:
                    nearest = min((k.due for k in self.keepers), default=now + self.interval)
                    self.changed.wait(max(0.001, nearest - now))
                    continue
            for keeper in due:
                self._renew(keeper)

    def _renew(self, keeper: LeaseKeeper) -> None:
        now = self.clock.monotonic()
        keeper.due = now + self.interval
        if keeper.time_limit is not None and now - keeper.started > keeper.time_limit:
            # past the hard time limit, which no pool but prefork enforces: let the lease lapse, so the reaper
            # hands the key to another run while this one is stuck
            log.warning("%s: run still going after its %gs time limit; its lease is left to expire",
                        keeper.key, keeper.time_limit)
            keeper.lost.set()
            self.remove(keeper)
            return
        try:
            if not self.queue.renew(keeper.key, keeper.token):
                keeper.lost.set()
                self.remove(keeper)
        except redis.RedisError:
            pass  # a blip: the next tick retries; the lease outlives two missed renewals

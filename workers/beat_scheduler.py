"""Beat without a single point of failure: celery-redbeat's scheduler, made to survive a Redis loss, and running the
sweeps the shared cache can answer itself (:meth:`Scheduler.apply_async`).

redbeat keeps the schedule in Redis and lets only the holder of a Redis lock run it, so two (or more) ``poolboy beat``
replicas can run: one is active, the others wait on the lock and take over at most ``POOLBOY_BEAT_LOCK_TIMEOUT``
seconds after the active one died (it stops extending the lock).

Stock redbeat assumes Redis never forgets: after a FLUSHALL, a restart without persistence or a failover to an
empty replica its lock and its schedule are gone, the next lock extension raises and beat exits, and a Redis
error while reading the schedule ends it too. :class:`Scheduler` turns both into a recovery instead: when the lock
is no longer ours it waits for the lock again (a standby may have taken over meanwhile: then this one is the
standby) and re-installs the static schedule; a Redis error skips the tick and retries shortly.

The schedule can also go without the lock: a starting beat installs its schedule, then waits for the lock; Redis
losing its data in between takes the schedule and the dead holder's lock, and the new beat then takes a fresh lock
over an empty schedule and would tick it forever, publishing nothing (no lease reaper, no sweeps: found by the chaos
test). So every tick also checks that the schedule is there (one ``EXISTS``) and installs it again if not.
"""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace
from typing import Any

import redis
from celery.signals import beat_init
from redbeat import RedBeatScheduler
from redbeat.schedulers import acquire_distributed_beat_lock, get_redis
from redis.exceptions import LockError

from engine import redis_oom

log = logging.getLogger(__name__)

# redbeat takes the lock in a beat_init receiver of its own, where a standby blocks for as long as it waits: beat's
# probes must be served first (a kubelet restarts a standby that answers none), so beat's own beat_init receiver
# (workers.app) starts them and then calls wait_for_lock
beat_init.disconnect(acquire_distributed_beat_lock)


def wait_for_lock(service: Any) -> None:
    """Block until this beat holds the scheduler's Redis lock (at once when it is free), as redbeat would."""
    acquire_distributed_beat_lock(sender=service)

#: seconds before retrying a tick that failed on a Redis error
RETRY_TICK = 1.0
#: the longest wait between two tries to reach Redis as beat starts
MAX_START_RETRY = 10.0


class Scheduler(RedBeatScheduler):
    """``beat_scheduler = "workers.beat_scheduler:Scheduler"``."""

    def setup_schedule(self) -> None:
        """Install the schedule; the first time (as beat starts), wait for Redis instead of exiting: the chart
        starts beat and its Redis together, and a beat that exits is only restarted by its kubelet, later. Once
        running, a failure is the tick's to retry."""
        if getattr(self, "_installed", False):
            super().setup_schedule()
            return
        delay = RETRY_TICK
        while True:
            try:
                super().setup_schedule()
                break
            except redis.ConnectionError as error:
                log.warning("beat: Redis unreachable at start (%s); retrying in %.0fs", error, delay)
                time.sleep(delay)
                delay = min(2 * delay, MAX_START_RETRY)
        self._installed = True

    def tick(self, *args: Any, **kwargs: Any) -> float:
        try:
            if self.lock_key and not self._holds_lock():
                self._take_lock_again()
            elif not self._schedule_present():
                log.warning("beat: the schedule is gone from Redis (Redis lost its data); installing it again")
                self.setup_schedule()
            return super().tick(*args, **kwargs)
        except (redis.RedisError, LockError) as error:
            if redis_oom.is_oom(error):
                redis_oom.report(log, "beat skips its tick and tries again", error)
            else:
                log.warning("beat: Redis unavailable or lock lost (%s); retrying in %.0fs", error, RETRY_TICK)
            return min(RETRY_TICK, self.max_interval)

    def apply_async(self, entry: Any, producer: Any = None, advance: bool = True, **kwargs: Any) -> Any:
        """A manage sweep the shared cache can answer runs here, with no task (:func:`workers.beat.sweep_cached`);
        anything else is sent as Celery's beat sends it."""
        from workers.beat import MANAGE_TASKS, sweep_cached

        kind = MANAGE_TASKS.get(entry.task)
        if kind is not None:
            try:
                swept = sweep_cached(self.app.runtime.get(), kind) is not None
            except redis.RedisError as error:
                if redis_oom.is_oom(error):
                    redis_oom.report(log, f"beat's sweep of {kind} is tried again at the next one", error)
                else:
                    log.warning("beat: sweep of %s: %s; the next sweep tries again", kind, error)
                swept = True
            if swept:
                if advance:
                    self.reserve(entry)
                return None
        return super().apply_async(entry, producer, advance, **kwargs)

    def _holds_lock(self) -> bool:
        return self.lock is not None and bool(self.lock.owned())

    def _schedule_present(self) -> bool:
        return bool(get_redis(self.app).exists(self.app.redbeat_conf.schedule_key))

    def _take_lock_again(self) -> None:
        """Block until the lock is ours (as a standby would), then put back the schedule Redis may have lost."""
        log.warning("beat: the Redis lock is not ours any more (Redis lost its data, or another beat took over); "
                    "waiting for it")
        self.lock = None
        acquire_distributed_beat_lock(sender=SimpleNamespace(scheduler=self))
        self.setup_schedule()
        log.info("beat: lock taken again; schedule re-installed")

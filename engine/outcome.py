"""What one run of a key came to, as the engine's one switch (:func:`engine.runner.finish`) maps it to the queue, like
controller-runtime's ``reconcileHandler``:

=================  ======================================================================  =====================
outcome            the queue                                                               metric ``result``
=================  ======================================================================  =====================
:class:`Succeeded`  forget the key's failures; add it after ``requeue_at`` if the run asked   success / requeue_after
:class:`Failed`     add it after the rate limiter's backoff (a transient fault, a bug)       error
:class:`Refused`    add it after the error's re-check interval (a permanent error, a 403)    permanent_error
:class:`HandedBack` add it now, for another worker (this one is stopping)                    handed_back
=================  ======================================================================  =====================

Every outcome then releases the key (DONE), which publishes one more run if the key was added during this one.
Every wait goes to the delaying queue in Redis: no retry lives in a worker's memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from poolboy.result import PermanentError


@dataclass(frozen=True)
class Succeeded:
    #: run again then (a lifespan's end, a time-dependent template), or None
    requeue_at: datetime | None = None
    #: keys to add now, and keys to hold for a window (a pool after a bind: a burst runs it once per window) of
    #: ``hold_seconds`` (None: ``Settings.hold_seconds``; 0: the delaying queue's next tick)
    wake: tuple[str, ...] = ()
    hold: tuple[str, ...] = ()
    hold_seconds: float | None = None

    @property
    def result(self) -> str:
        return "success" if self.requeue_at is None else "requeue_after"


@dataclass(frozen=True)
class Failed:
    #: seconds until the retry (the rate limiter's backoff, at least the server's Retry-After)
    retry_in: float
    #: the failure, as the run's log line gives it
    text: str
    result = "error"


@dataclass(frozen=True)
class Refused:
    error: PermanentError
    #: seconds until, and the epoch second when, the key runs again to see whether the error is fixed
    recheck_after: float
    recheck_at: float
    wake: tuple[str, ...] = ()
    result = "permanent_error"


@dataclass(frozen=True)
class HandedBack:
    result = "handed_back"


Outcome = Succeeded | Failed | Refused | HandedBack

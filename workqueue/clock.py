"""The clock the work queue and the engine read time from (client-go's ``k8s.io/utils/clock``), given to them rather
than read from :mod:`time`, so that a test moves time on instead of sleeping (:class:`FakeClock`).

Two readings, for two uses: :meth:`Clock.now` is wall-clock time in epoch seconds, the only time several processes
and Redis can share (delaying-queue deadlines, pending marks, lease stamps, refresh times), which the Lua scripts get
as arguments from their caller; :meth:`Clock.monotonic` never goes back, for durations inside one process (how long a
run took, when a lease is next renewed).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences of two readings mean anything."""
        ...


class SystemClock:
    """The host's clocks (:func:`time.time`, :func:`time.monotonic`)."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


#: the clock everything uses unless given another
SYSTEM_CLOCK: Clock = SystemClock()


class FakeClock:
    """A clock that stands still until a test moves it (client-go's ``testing.FakeClock``): both readings move
    together, by :meth:`advance`. Safe to read from other threads (a lease renewer) while a test moves it."""

    def __init__(self, now: float | None = None, monotonic: float = 1_000.0) -> None:
        """Standing at ``now`` (default: the host's time when made, so that what it stamps in Redis looks current)."""
        self._now = time.time() if now is None else now
        self._monotonic = monotonic
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both readings on by ``seconds``."""
        with self._lock:
            self._now += seconds
            self._monotonic += seconds

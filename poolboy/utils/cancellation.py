"""A reconcile's cooperative stop points: its soft time limit, and a request to stop early.

Why cooperative: only a process's main thread can be interrupted (a signal), so Celery's time limits and the
worker's hand-back on shutdown reach a reconcile only in a prefork pool child. Under the threads pool several
reconciles share one process and none of them is the main thread. Like Go's ``context.Context`` (which
controller-runtime hands to every reconcile), a run carries a :class:`Scope`; the places where a reconcile spends
its time call :func:`checkpoint` — every Kubernetes API request and every top-level template render — and there a
run past its deadline, or asked to stop, ends with an exception. A reconcile is level-based and idempotent, so
ending it between two requests is as safe as a crash.

Nothing here knows Celery: the engine opens the scope around the domain reconciler and decides what to raise.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class RunTimeLimitExceeded(Exception):
    """The reconcile ran past its soft time limit (an ordinary failure: retried with backoff)."""


class Scope:
    """One reconcile's deadline and, once asked, when and how it must stop."""

    def __init__(self, soft_limit: float | None = None) -> None:
        self.started = time.monotonic()
        self.soft_limit = soft_limit
        self.deadline = math.inf if soft_limit is None else self.started + soft_limit
        self._stop_at = math.inf
        self._stop: Callable[[], BaseException] | None = None
        self._woken = threading.Event()  # wakes a :func:`wait` as soon as a stop is asked

    def stop_after(self, grace: float, error: Callable[[], BaseException]) -> None:
        """Ask the run to stop ``grace`` seconds from now: its next checkpoint after that raises ``error()``.
        A later request never postpones an earlier one."""
        when = time.monotonic() + max(0.0, grace)
        if when < self._stop_at:
            self._stop_at, self._stop = when, error
            self._woken.set()

    def check(self) -> None:
        now = time.monotonic()
        if now >= self._stop_at and self._stop is not None:
            stop, self._stop, self._stop_at = self._stop, None, math.inf  # once: the run's clean-up is not interrupted
            raise stop()
        if now >= self.deadline:
            self.deadline = math.inf  # once, as Celery's soft limit
            raise RunTimeLimitExceeded(f"reconcile ran longer than its soft time limit of {self.soft_limit:g}s")

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, checking the scope at least every 50 ms and at once when a stop is asked."""
        end = time.monotonic() + seconds
        while True:
            self.check()
            left = end - time.monotonic()
            if left <= 0:
                return
            target = min(left, 0.05, max(0.0, self._stop_at - time.monotonic()))
            if self._woken.wait(target):
                self._woken.clear()


_CURRENT: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("poolboy_run_scope", default=None)


@contextmanager
def scope(soft_limit: float | None = None) -> Iterator[Scope]:
    """Run the block as one reconcile with its own :class:`Scope` (the thread's previous scope comes back after)."""
    current = Scope(soft_limit)
    token = _CURRENT.set(current)
    try:
        yield current
    finally:
        _CURRENT.reset(token)


def checkpoint() -> None:
    """Where a reconcile may be stopped: raises if the current run is past its deadline or asked to stop (no-op
    outside a run)."""
    current = _CURRENT.get()
    if current is not None:
        current.check()


def wait(seconds: float) -> None:
    """Sleep that the current run's stop request cuts short (``time.sleep`` outside a run)."""
    current = _CURRENT.get()
    if current is None:
        time.sleep(seconds)
    else:
        current.wait(seconds)

"""The one backoff policy of every retry loop: exponential with full jitter, on tenacity's
:class:`~tenacity.wait_random_exponential` (the AWS "full jitter" scheme client-go's workqueue uses too).

Reconcile retries (``workqueue.ratelimit``: per-key failure counts kept in Redis), the watcher's re-list and delivery
loops (:class:`Backoff`), and the Event recorder (tenacity's retrying directly) all wait this way, so the spread
of competing retries and the caps are read in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenacity import wait_exponential, wait_random_exponential


@dataclass(frozen=True)
class _Attempt:
    """The only part of tenacity's RetryCallState a wait strategy reads."""

    attempt_number: int


def full_jitter(attempt: int, *, base: float, cap: float, floor: float = 0.0) -> float:
    """Seconds before retry number ``attempt`` (1 = the first): uniform in [0, min(cap, base × 2^(attempt−1))],
    never below ``floor``."""
    wait = wait_random_exponential(multiplier=base, max=cap)
    return max(floor, float(wait(_Attempt(max(1, attempt)))))  # type: ignore[arg-type]


def doubling(attempt: int, *, base: float, cap: float) -> float:
    """Seconds before attempt number ``attempt`` (1 = the first) without jitter: min(cap, base × 2^(attempt−1)).
    For a single restarter (``poolboy dev`` restarting a component), where there is no crowd to spread."""
    wait = wait_exponential(multiplier=base, min=base, max=cap)
    return float(wait(_Attempt(max(1, attempt))))  # type: ignore[arg-type]


@dataclass
class Backoff:
    """A loop's own failure count: :meth:`next_delay` after each failure, :meth:`reset` after a success."""

    base: float = 0.2
    cap: float = 30.0
    failures: int = 0

    def next_delay(self) -> float:
        self.failures += 1
        return full_jitter(self.failures + 1, base=self.base, cap=self.cap)

    def reset(self) -> None:
        self.failures = 0

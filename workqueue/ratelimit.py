"""The per-key rate limiter, with client-go's ``workqueue.RateLimiter`` interface: :meth:`RateLimiter.when` a key
failed (how long until it runs again), :meth:`RateLimiter.forget` it once it no longer fails,
:meth:`RateLimiter.num_requeues` (its failures in a row).

Exponential backoff with full jitter, counted per object (not per message), like client-go's
``ItemExponentialFailureRateLimiter``. The failure count lives in Redis (:func:`workqueue.keyspace.failures`), so a
retry on another worker continues the same sequence, and a count nobody forgets expires after an hour.

A failure may come with two hints client-go's interface has no room for: the server's Retry-After, never waited
less than (up to the limiter's cap), and whether it is a fault of the server that passes (5xx, 429, no answer),
whose backoff stops at a lower cap: once such a fault is over, every key that met it runs again within seconds.
"""

from __future__ import annotations

import redis

from poolboy.utils.backoff import full_jitter
from workqueue import keyspace
from workqueue.roundtrip import RoundTrip

BASE = 1.0
FLOOR = 0.1
FAILURES_TTL = 3600


def delay(failures: int, retry_after: float | None = None, cap: float = 300.0,
          retry_after_cap: float | None = None) -> float:
    """Full jitter (:func:`poolboy.utils.backoff.full_jitter`): uniform in [FLOOR, min(cap, BASE * 2**(failures-1))],
    never below the server's Retry-After (itself capped at ``retry_after_cap``, default ``cap``)."""
    chosen = full_jitter(failures, base=BASE, cap=cap, floor=FLOOR)
    if retry_after:
        chosen = max(chosen, min(retry_after, retry_after_cap if retry_after_cap is not None else cap))
    return chosen


class RateLimiter:
    """``RateLimiter(client, max_delay, fault_max_delay)``: backoff up to ``max_delay`` seconds, or up to
    ``fault_max_delay`` for a fault of the server that passes (see the module docstring)."""

    def __init__(self, client: redis.Redis, max_delay: float = 300.0, fault_max_delay: float | None = None) -> None:
        self.redis = client
        self.max_delay = max_delay
        self.fault_max_delay = max_delay if fault_max_delay is None else fault_max_delay

    def when(self, key: str, *, retry_after: float | None = None, fault: bool = False) -> float:
        """Count one more failure of ``key``; the seconds until it should run again."""
        pipe = self.redis.pipeline()
        pipe.incr(keyspace.failures(key))
        pipe.expire(keyspace.failures(key), FAILURES_TTL)
        failures = int(pipe.execute()[0])
        return delay(failures, retry_after, self.fault_max_delay if fault else self.max_delay,
                     retry_after_cap=self.max_delay)

    def forget(self, key: str, trip: RoundTrip | None = None) -> None:
        """Start ``key``'s count over: in ``trip`` when given (the run's last round trip), else at once."""
        if trip is None:
            self.redis.delete(keyspace.failures(key))
        else:
            trip.command("DEL", keyspace.failures(key))

    def num_requeues(self, key: str) -> int:
        """``key``'s failures in a row (0 once forgotten)."""
        return int(self.redis.get(keyspace.failures(key)) or 0)

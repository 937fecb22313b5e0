"""The per-key rate limiter: exponential backoff with full jitter, counted per object (not per message), like
client-go's ``ItemExponentialFailureRateLimiter``.

The failure count lives in Redis (:func:`workqueue.keyspace.failures`), so a retry on another worker continues the
same sequence, and a run that does not fail forgets it.
"""

from __future__ import annotations

import redis

from poolboy.utils.backoff import full_jitter
from workqueue import keyspace

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
    def __init__(self, client: redis.Redis) -> None:
        self.redis = client

    def failure(self, key: str) -> int:
        """Count one more failure of ``key``; how many in a row now."""
        pipe = self.redis.pipeline()
        pipe.incr(keyspace.failures(key))
        pipe.expire(keyspace.failures(key), FAILURES_TTL)
        return int(pipe.execute()[0])

    @staticmethod
    def forget_command(key: str) -> tuple[str, str]:
        """The command that forgets ``key``'s failures (for a round trip)."""
        return "DEL", keyspace.failures(key)

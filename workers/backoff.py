"""Per-key exponential backoff with full jitter, counted per object (not per message), like client-go.

The failure count lives in Redis (``gate:{key}:failures``) so an event-triggered run that succeeds resets it, and
a retry on another worker continues the same sequence.
"""

from __future__ import annotations

import redis

from poolboy.utils.backoff import full_jitter

BASE = 1.0
FLOOR = 0.1
FAILURES_TTL = 3600


def failures_key(key: str) -> str:
    return f"gate:{{{key}}}:failures"


def delay(failures: int, retry_after: float | None = None, cap: float = 300.0,
          retry_after_cap: float | None = None) -> float:
    """Full jitter (:func:`poolboy.utils.backoff.full_jitter`): uniform in [FLOOR, min(cap, BASE * 2**(failures-1))],
    never below the server's Retry-After (itself capped at ``retry_after_cap``, default ``cap``)."""
    chosen = full_jitter(failures, base=BASE, cap=cap, floor=FLOOR)
    if retry_after:
        chosen = max(chosen, min(retry_after, retry_after_cap if retry_after_cap is not None else cap))
    return chosen


def record_failure(client: redis.Redis, key: str) -> int:
    pipe = client.pipeline()
    pipe.incr(failures_key(key))
    pipe.expire(failures_key(key), FAILURES_TTL)
    return int(pipe.execute()[0])

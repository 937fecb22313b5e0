"""Redis refusing writes because it reached ``maxmemory`` (the chart's policy is ``noeviction``: nothing the work queue
or the cache holds is disposable, so Redis refuses instead of evicting).

Every component recognises the refusal (:func:`is_oom`), counts it (``poolboy_redis_oom_errors_total``, what the
chart's alert fires on) and says so in one line at most every :data:`LOG_EVERY_S` seconds per process, with how
many refusals the line stands for: a full Redis is an operator's problem to fix, and a line per refused command
would bury the one that says what is wrong. Nothing crashes and nothing spins: a refused run ends, the watcher stops
trusting the cache until Redis accepts writes again and then lists everything once (:mod:`cache.writer`), and the
work a refusal lost is added again by that list, the work queue's stale-mark republish and the sweeps.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from prometheus_client import Counter

from engine.registries import WATCHER, WORKER, shared

OOM_ERRORS = shared(Counter("poolboy_redis_oom_errors_total",
                            "Redis commands refused because Redis reached maxmemory (OOM command not allowed)",
                            registry=None), WORKER, WATCHER)
#: at most one line per this many seconds per process
LOG_EVERY_S = 30.0
#: what Redis's refusal says, whichever exception class the client chose for it (a script's is a ResponseError)
OOM_PREFIX = "OOM command not allowed"


def is_oom(error: BaseException) -> bool:
    """Whether ``error`` is Redis refusing a write for memory."""
    if isinstance(error, redis.exceptions.OutOfMemoryError):
        return True
    return isinstance(error, redis.exceptions.ResponseError) and OOM_PREFIX in str(error)


class _Throttle:
    """Counts refusals and lets one line through every :data:`LOG_EVERY_S` seconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = float("-inf")
        self._unreported = 0

    def due(self) -> int:
        """How many refusals the next line stands for, or 0 when no line is due."""
        with self._lock:
            self._unreported += 1
            now = time.monotonic()
            if now - self._last < LOG_EVERY_S:
                return 0
            self._last, count, self._unreported = now, self._unreported, 0
            return count


_throttle = _Throttle()


def report(log: logging.Logger, what: str, error: BaseException) -> None:
    """Count a refusal of ``what`` and, when due, log it in one line (no traceback)."""
    OOM_ERRORS.inc()
    count = _throttle.due()
    if count:
        log.error("Redis refuses writes: it reached maxmemory (%s); %s (%d refusal%s since the last such line). Free "
                  "memory or raise redis.resources.limits.memory: work resumes by itself once Redis accepts writes",
                  error, what, count, "" if count == 1 else "s")

"""The due-index: "run this key again at T" as a Redis ZSET (member = work key, score = deadline epoch seconds).

Deadlines of hours or weeks (lifespans), slow re-checks of permanent errors and long backoffs live here instead
of in Celery ETA/countdown messages, which on Redis would sit unacked in a worker's memory and be redelivered in a
loop once older than the visibility timeout. Beat's ``sweep_due`` pops what is due and ADDs it to the gate. The
index is a hint: the object is the truth, and the periodic resync rebuilds it after a Redis loss.
"""

from __future__ import annotations

import time
from datetime import datetime

import redis

from cache.store import ScriptCall

DUE = "due"

# ZRANGEBYSCORE + ZREM in one script, so two sweepers (two beats by mistake) never both pop a key.
_POP_DUE = """
local keys = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #keys > 0 then
  redis.call('ZREM', KEYS[1], unpack(keys))
end
return keys
"""

# ZADD LT as a script, so a run's deadline goes in the pipeline of the run's other Redis work (workers/tasks.py)
_SCHEDULE = "return redis.call('ZADD', KEYS[1], 'LT', ARGV[1], ARGV[2])"


class DueIndex:
    def __init__(self, client: redis.Redis, name: str = DUE) -> None:
        self.redis = client
        self.name = name
        self._pop_due = client.register_script(_POP_DUE)
        self._schedule = client.register_script(_SCHEDULE)

    def schedule(self, key: str, at: datetime | float) -> None:
        """Run ``key`` at ``at`` unless an earlier deadline is already recorded (ZADD LT keeps the earliest)."""
        script, keys, args = self.schedule_call(key, at)
        script(keys=keys, args=args)

    def schedule_call(self, key: str, at: datetime | float) -> ScriptCall:
        """:meth:`schedule` as (script, keys, args), for a caller that pipelines it with other scripts."""
        score = at.timestamp() if isinstance(at, datetime) else float(at)
        return self._schedule, [self.name], [repr(score), key]

    def pop_due(self, now: datetime | float | None = None, limit: int = 1000) -> list[str]:
        """Atomically remove and return up to ``limit`` keys whose deadline is at or before ``now``."""
        if now is None:
            now = time.time()
        score = now.timestamp() if isinstance(now, datetime) else float(now)
        return [k.decode() if isinstance(k, bytes) else k
                for k in self._pop_due(keys=[self.name], args=[repr(score), limit])]

    def remove(self, key: str) -> None:
        self.redis.zrem(self.name, key)

    def deadline(self, key: str) -> float | None:
        return self.redis.zscore(self.name, key)

    def size(self) -> int:
        return int(self.redis.zcard(self.name))

    def oldest(self) -> float | None:
        """The earliest deadline (epoch seconds), or None when the index is empty."""
        first = self.redis.zrange(self.name, 0, 0, withscores=True)
        return float(first[0][1]) if first else None

"""The delaying queue: "add this key at T" (client-go's ``AddAfter``), kept in Redis, so no delayed run lives only in
a worker's memory.

A ZSET (member = work key, score = when, epoch seconds) holds one time per key, the earliest asked (``ZADD LT``).
Every worker releases what is due a few times a second (:func:`release_due`, run by :mod:`workers.pump`): an ADD
per key, then the key is forgotten, so a worker killed in between leaves it for the next release, and a release
twice only coalesces. Deadlines of hours or weeks (lifespans), re-checks of permanent errors, retries after a
backoff and the windows of :meth:`DelayingQueue.hold_call` all wait here. The index is a hint: the object is the
truth, and the periodic resync rebuilds it after a Redis loss.

**Hold** is a window: the key runs once when it ends, however many adds come meanwhile (a pool woken by every claim of
a burst refills once per window). The key is marked pending in the queue's held state, so an add in between
coalesces into it, and its release is the window's end.
"""

from __future__ import annotations

from datetime import datetime

from redisscripts import Call, Script
from workqueue import keyspace
from workqueue.queue import Added, WorkQueue, new_id
from workqueue.roundtrip import send_all

#: times are epoch seconds
ADD_AFTER = Script("workqueue/add_after", keys=("due",), args=("at", "key"))
HOLD = Script("workqueue/hold", keys=("pending", "due"), args=("msg_id", "now_ms", "pending_ttl", "at", "key"))
DUE = Script("workqueue/due", keys=("due",), args=("now", "limit"))
#: ``released``: the keys just added
FORGET_DUE = Script("workqueue/forget_due", keys=("due",), args=("now",), rest="released")


def _seconds(at: datetime | float) -> float:
    return at.timestamp() if isinstance(at, datetime) else float(at)


class DelayingQueue:
    def __init__(self, queue: WorkQueue, name: str = keyspace.DUE) -> None:
        self.queue = queue
        self.redis = queue.redis
        self.clock = queue.clock
        self.name = name
        self._add_after = ADD_AFTER.register(self.redis)
        self._hold = HOLD.register(self.redis)
        self._due = DUE.register(self.redis)
        self._forget = FORGET_DUE.register(self.redis)

    def add_after_call(self, key: str, at: datetime | float) -> Call[int]:
        """Add ``key`` at ``at``, unless an earlier time is recorded for it already."""
        return self._add_after.call(due=self.name, at=repr(_seconds(at)), key=key)

    def add_after(self, key: str, at: datetime | float) -> None:
        send_all(self.redis, [self.add_after_call(key, at)])

    def hold_call(self, key: str, window: float) -> Call[bool]:
        """Run ``key`` once when a window of ``window`` seconds from now ends; adds meanwhile join that run. True when
        this call opened the window (a mark already there, queued or owed, covers the adds the same way)."""
        return self._hold.call(bool, pending=keyspace.pending(key), due=self.name, msg_id=new_id(),
                               now_ms=self.queue.clock_ms(), pending_ttl=self.queue.pending_ttl,
                               at=repr(self.clock.now() + window), key=key)

    def release_due(self, now: float | None = None, limit: int = 1000) -> list[Added]:
        """ADD every key whose time came by ``now`` (default: the queue's clock) (at most ``limit``), then forget them:
        the answers of those ADDs."""
        now = self.clock.now() if now is None else now
        due = [_text(key) for key in self._due.run(due=self.name, now=repr(now), limit=limit)]
        if not due:
            return []
        added = self.queue.add_many(due, release=True)
        self._forget.run(due=self.name, now=repr(now), released=due)
        return added

    def remove(self, key: str) -> None:
        self.redis.zrem(self.name, key)

    def deadline(self, key: str) -> float | None:
        return self.redis.zscore(self.name, key)

    def size(self) -> int:
        return int(self.redis.zcard(self.name))

    def oldest(self) -> float | None:
        """The earliest time (epoch seconds), or None when nothing waits."""
        first = self.redis.zrange(self.name, 0, 0, withscores=True)
        return float(first[0][1]) if first else None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value

"""The work queue: client-go's workqueue contract on Redis, one atomic Lua script per transition.

* **add** (:meth:`WorkQueue.add_call`): the key needs a run. Adds before it runs coalesce into one run; an add while
  it runs makes exactly one more run afterwards.
* **start** (client-go's *get*): take the key's lease; a second run of the same key is refused while the lease holds.
* **done**: release the lease, and publish the one more run an add during the run asked for.
* **add after** and **hold**: :mod:`workqueue.delaying`; **forget** and the per-key backoff:
  :mod:`workqueue.ratelimit`.

Per work key two Redis keys (:mod:`workqueue.keyspace`): ``pending`` ("a run is owed") and ``active`` ("a run is in
progress", a lease renewed by :class:`workqueue.lease.LeaseKeeper`). ``pending`` is cleared at START, *before* the
reconcile reads the object: every change the run might not see arrives after START and re-marks it, so DONE
publishes exactly one more run. The ZSET of lease deadlines lets :meth:`WorkQueue.reap` find runs whose holder died
without DONE (a SIGKILL) and run them again within about one lease period.

A run is a message on the kind's Celery queue; the queue decides whether one is owed and, given an
:data:`Encoder`, pushes it in the same script (:mod:`workers.messages`), so a key is never marked queued without its
message. The queue knows nothing of caches, own writes or sweeps: those compose its ADD (the Lua library
``redisscripts/workqueue/queue.lua``, with the values of :meth:`WorkQueue.add_values`).
The rules in short, with the race each one closes: docs/behaviour.md#work queue.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import redis

from redisscripts import Call, Script
from workqueue import keyspace
from workqueue.clock import SYSTEM_CLOCK, Clock
from workqueue.roundtrip import send_all

#: priority classes; lower wins. Each maps to a Redis transport message priority (0 = highest).
CLASSES: dict[str, int] = {"event": 0, "resync": 1}
MESSAGE_PRIORITY: dict[int, int] = {0: 0, 1: 9}
#: ADD outcomes, in script return-code order; scripts composing ADD may answer more (:mod:`engine.own_writes`)
ADD_OUTCOMES = ("coalesced", "pending-while-running", "published", "own-write", "deferred", "held", "continued")

#: ``priority`` is the class (:data:`CLASSES`); ``release`` 1 when the delaying queue adds a key whose time came;
#: ``queue_list`` and ``message`` the message to push when a run is owed (None and '' without an encoder)
ADD = Script("workqueue/add", keys=("pending", "active", "queue_list"),
             args=("msg_id", "priority", "pending_ttl", "stale_ms", "now_ms", "release", "message"))
#: ``now_ms`` the worker's clock
START = Script("workqueue/start", keys=("pending", "active", "leases"),
               args=("token", "lease_ms", "key", "pending_ttl", "msg_id", "now_ms"))
DONE = Script("workqueue/done", keys=("pending", "active", "leases"), args=("token", "msg_id", "key", "pending_ttl"))
RENEW = Script("workqueue/renew", keys=("active", "leases"), args=("token", "lease_ms", "key"))
#: the layouts make the keys of each work key it finds (:func:`workqueue.keyspace.layout`)
REAP = Script("workqueue/reap", keys=("leases",),
              args=("limit", "pending_ttl", "msg_id_prefix", "pending_layout", "active_layout"))


def new_id() -> str:
    return uuid.uuid4().hex


#: ``(key, msg_id, message priority) -> (queue list, message)``: a message the queue pushes itself when it decides
#: one is owed (:class:`workers.messages.QueuedMessages`)
Encoder = Callable[[str, str, int], tuple[str, bytes]]


@dataclass(frozen=True)
class Publish:
    """A run is owed: one ``reconcile(key)`` message with this task id and priority class; ``queued`` when the
    script pushed it already."""

    key: str
    msg_id: str
    cls: int
    queued: bool = False

    @property
    def priority(self) -> int:
        return MESSAGE_PRIORITY[self.cls]


@dataclass(frozen=True)
class Added:
    """ADD's answer: what happened (:data:`ADD_OUTCOMES`) and the run to publish, unless the script pushed it."""

    outcome: str
    publish: Publish | None = None

    @property
    def unpublished(self) -> Publish | None:
        return self.publish if self.publish is not None and not self.publish.queued else None


@dataclass(frozen=True)
class Started:
    """START succeeded; ``waited`` is how long the key's oldest pending mark waited (None if there was none)."""

    waited: float | None


def read_added(key: str) -> Callable[[Any], Added]:
    """How ADD's reply (and that of a script composing it) reads, for ``key``."""
    def read(reply: Any) -> Added:
        outcome = ADD_OUTCOMES[int(reply[0])]
        if outcome != "published":
            return Added(outcome)
        return Added(outcome, Publish(key, _text(reply[1]), int(reply[2]),
                                      queued=len(reply) > 3 and int(reply[3]) == 1))
    return read


class WorkQueue:
    """The queue's transitions against one Redis client; each ``*_call`` is one step of a
    :class:`workqueue.roundtrip.RoundTrip`, the plain method a round trip of its own."""

    def __init__(self, client: redis.Redis, lease_seconds: float = 30.0, pending_ttl: float = 900.0,
                 stale_seconds: float = 60.0, encoder: Encoder | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.redis = client
        #: the time of marks, lease stamps and deadlines, for the queue and what builds on it (delaying, lease)
        self.clock = clock
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.pending_ttl = max(1, int(pending_ttl))
        self.stale_ms = int(stale_seconds * 1000)
        #: given by the publisher: ADD then pushes the message it decides is owed itself
        self.encoder = encoder
        self._add = ADD.register(client)
        self._start = START.register(client)
        self._done = DONE.register(client)
        self._renew = RENEW.register(client)
        self._reap = REAP.register(client)

    @property
    def lease_seconds(self) -> float:
        return self.lease_ms / 1000

    def clock_ms(self) -> int:
        """The caller's clock for marks and lease deadlines (ADD, START): passing it saves the scripts a ``TIME``
        each. A skew between hosts only shifts when a mark counts as stale (a minute) and the "waited" metric; the
        reaper judges a lease by its key's own TTL."""
        return int(self.clock.now() * 1000)

    # --- ADD -------------------------------------------------------------------------------------------------

    def add_values(self, key: str, priority: str = "event") -> dict[str, Any]:
        """ADD's keys and arguments by name, ``release`` aside: for ADD and for the scripts that compose its Lua
        (``workqueue_add``, then ``workqueue_push`` of the message owed, which only an encoder makes), which declare
        them under these names."""
        msg_id = new_id()
        queue_list: str | None = None
        message: bytes | str = ""
        if self.encoder is not None:
            queue_list, message = self.encoder(key, msg_id, MESSAGE_PRIORITY[CLASSES[priority]])
        return {"pending": keyspace.pending(key), "active": keyspace.active(key), "queue_list": queue_list,
                "msg_id": msg_id, "priority": CLASSES[priority], "pending_ttl": self.pending_ttl,
                "stale_ms": self.stale_ms, "now_ms": self.clock_ms(), "message": message}

    def add_call(self, key: str, priority: str = "event", *, release: bool = False) -> Call[Added]:
        """ADD: ``key`` needs a run; ``release``: the delaying queue adding a key whose time came."""
        return self._add.call(read_added(key), **self.add_values(key, priority), release=int(release))

    def add(self, key: str, priority: str = "event") -> Added:
        return send_all(self.redis, [self.add_call(key, priority)])[0]

    def add_many(self, keys: Iterable[str], priority: str = "event", *, release: bool = False) -> list[Added]:
        """ADD for many keys in one round trip (a sweep adds every key of a kind)."""
        return send_all(self.redis, [self.add_call(key, priority, release=release) for key in keys])

    # --- START / DONE / RENEW --------------------------------------------------------------------------------

    def start_call(self, key: str, token: str, msg_id: str | None = None) -> Call[Started | None]:
        """Take the key's lease; None when another run holds it (the key is then marked owed by that run)."""
        return self._start.call(_read_started, pending=keyspace.pending(key), active=keyspace.active(key),
                                leases=keyspace.LEASES, token=token, lease_ms=self.lease_ms, key=key,
                                pending_ttl=self.pending_ttl, msg_id=msg_id or new_id(), now_ms=self.clock_ms())

    def start(self, key: str, token: str, msg_id: str | None = None) -> Started | None:
        return send_all(self.redis, [self.start_call(key, token, msg_id)])[0]

    def done(self, key: str, token: str) -> Publish | None:
        return send_all(self.redis, [self.done_call(key, token)])[0]

    def done_call(self, key: str, token: str) -> Call[Publish | None]:
        """Release the lease if it is still ours; the one more run to publish when the key was added meanwhile."""
        def read(reply: Any) -> Publish | None:
            return Publish(key, _text(reply[1]), int(reply[2])) if int(reply[0]) == 2 else None
        return self._done.call(read, pending=keyspace.pending(key), active=keyspace.active(key),
                               leases=keyspace.LEASES, token=token, msg_id=new_id(), key=key,
                               pending_ttl=self.pending_ttl)

    def renew(self, key: str, token: str) -> bool:
        """Extend the lease; False means it was lost (expired, or taken by another run)."""
        return bool(self._renew.run(active=keyspace.active(key), leases=keyspace.LEASES, token=token,
                                    lease_ms=self.lease_ms, key=key))

    # --- recovery and observation ----------------------------------------------------------------------------

    def reap(self, limit: int = 1000) -> list[Publish]:
        """Mark owed the keys whose lease expired without DONE (their holder died); the runs to publish."""
        reply = self._reap.run(leases=keyspace.LEASES, limit=limit, pending_ttl=self.pending_ttl,
                               msg_id_prefix=new_id(), pending_layout=keyspace.layout(keyspace.pending),
                               active_layout=keyspace.layout(keyspace.active))
        return [Publish(_text(key), _text(msg_id), int(cls)) for key, msg_id, cls in reply]

    def pending_stats(self, scan_limit: int = 10000) -> tuple[int, float]:
        """(number of pending marks, age in seconds of the oldest), from a bounded SCAN: for metrics only."""
        count, oldest_ms = 0, None
        now_ms = self.clock_ms()
        for name in self.redis.scan_iter(match=keyspace.pending("*"), count=1000):
            count += 1
            value = self.redis.get(name)
            if value:
                ts = int(_text(value).split("|")[1])
                oldest_ms = ts if oldest_ms is None else min(oldest_ms, ts)
            if count >= scan_limit:
                break
        return count, (max(0, now_ms - oldest_ms) / 1000 if oldest_ms is not None else 0.0)


def _read_started(reply: Any) -> Started | None:
    if int(reply[0]) != 1:
        return None
    waited_ms = int(reply[1])
    return Started(waited_ms / 1000 if waited_ms >= 0 else None)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value

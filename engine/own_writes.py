"""Own writes: the watch event of a write a reconcile of key K made to K's own objects does not run K again.

Without this, every run that writes (a finalizer, an init patch, a status PUT, a managed resource it patched) is
followed by one more, mostly no-op run of the same key: the watcher sees the write, the work queue marks the key
"pending while running", and DONE re-publishes it.

A write is identified by ``"<uid>/<resourceVersion>"``: every change the API server makes gets a new
resourceVersion, so a write by anyone else never has the same id. Only *conditional* writes are recorded (a
precondition on the resourceVersion the run read, or a create): the state they produce is exactly "what the run
read, plus its own change" (for a create: what the create returned), so the run has already acted on it. That
holds for a write of the object's *spec* too: the run writes the status for the spec it wrote, its conditions
stamped with the generation that write produced (:func:`poolboy.domain.conditions.observe`), so ``kubectl wait``
never waits for a run that the dropped event would have caused. An unconditional write that changed nothing would
return the version of somebody else's write, whose event must not be dropped.

The same holds for the keys a run wakes: a handle run that creates its resource and wakes its claim would otherwise
run the claim twice, once for the WAKE and once more for the resource's watch event (which maps to the claim too)
when that event arrives after the claim's run began. The run's WAKE (``redisscripts/engine/wake.lua``) records its write
ids for the woken key before it ADDs it, in one script after the run's cache writes: the run it causes reads those
writes, so their events are that key's own as well.

What a run *got* counts the same way: a run that read an object at version V (by name, from the cache or the API)
has acted on V, so V's watch event, arriving during the run or after it, brings it nothing (``engine/runner.py`` passes
the versions of the run's journal, :meth:`cache.journal.RunJournal.seen`, to SETTLE with the write ids). And a WAKE
that finds a run of the woken key going on defers its write ids to that run like watch events: the run goes again only
if it did not get those versions itself (so a claim run started by its resource's ADDED event, while the handle run
that created the resource is still writing the handle's status, does not run a third time to find nothing to do).

A run can also settle the events of a write before it makes it: a claim about to bind or create its handle, a handle
about to create or update its bound claim's resource, will wake that key at its end anyway, and the write's watch
event often comes first (a run of the key while the run is still writing, then one more for the WAKE).
The domain says so (:meth:`poolboy.context.Context.will_wake`); :class:`Promises` records the promise
(:func:`workqueue.keyspace.promised`, lapsing with the run's lease), OBSERVE holds the key's events meanwhile
(:func:`workqueue.keyspace.held_events`), and the run's WAKE, whatever its outcome, ends the promise and adds the key
once, or defers the held events to the key's run going on. Held events left by a run that died make the key dirty for
the sweeps (:func:`engine.sweeps.dirty_keys`).

Two Redis keys per work key K, hash-tagged ``{K}`` like the queue's own keys:

* :func:`workqueue.keyspace.own_writes` — the write ids recorded by finished runs of K, and by runs that woke K after
  writing, space-separated in one string that OBSERVE reads with the queue's marks in one MGET (short TTL: an event
  comes within seconds; at most its newest 4 KB).
* :func:`workqueue.keyspace.deferred_events` — the ids of events that arrived while a run of K was going,
  space-separated in one string. The watch event of a write usually arrives *before* the run ends (often before the
  next line of the reconciler runs), so the watcher cannot decide then; the run decides at its end, when it knows
  all its writes.

Both sides compose the queue's scripts (``redisscripts/engine/observe.lua`` and ``settle.lua``), so an event is always
decided by exactly one of them and costs no round trip of its own:

* the watcher's OBSERVE: id among K's own writes -> skip (a finished run wrote it); else a run of K holds the
  key's lease -> deferred to that run; else the work queue's ADD, as for any event;
* the run's SETTLE: records the run's write ids, then takes every deferred id that is not one of the key's own
  writes as a change by someone else and marks the key owed; the queue's DONE, in the same script, then releases
  the lease and publishes exactly that one more run. A run that dies before DONE leaves its deferred ids
  behind; the queue's lease reaper re-runs the key and that run's SETTLE judges them (at worst one extra run).
  Redis is an accelerator:
  if the watcher's OBSERVE fails, it adds the key.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import redis
from prometheus_client import Counter

from engine.registries import WORKER
from poolboy.observability import Write, on_write
from redisscripts import Call, Script
from workqueue import keyspace
from workqueue.queue import Added, WorkQueue, new_id, read_added

log = logging.getLogger(__name__)

#: how long a finished run's write ids are remembered: the watch event of a write normally arrives in milliseconds
RECORD_TTL_MS = 60_000
#: a safety bound for ids deferred to a run that died without settling (the reaper re-runs the key long before)
DEFERRED_TTL_S = 86_400

DEFERRED_EVENTS = Counter("poolboy_deferred_watch_events_total",
                          "Watch events that arrived during a run of their key, as that run judged them: its own "
                          "write (dropped) or someone else's change (the key runs again)", ["outcome"], registry=WORKER)


# --- collecting one run's writes (worker side) -------------------------------------------------------------------


@dataclass
class Collector:
    """The recordable writes of the run in progress in this thread."""

    idents: list[str] = field(default_factory=list)

    def add(self, write: Write) -> None:
        # A create is conditional by nature (it fails if the object exists): its ADDED event carries exactly what the
        # create returned, which the run already holds (a handle run that creates its resource must not run again
        # only to find the resource it created).
        if write.verb == "create" or write.conditional:
            self.idents.append(write.ident)


_current: contextvars.ContextVar[Collector | None] = contextvars.ContextVar("own_writes_collector", default=None)


def _on_write(write: Write) -> None:
    collector = _current.get()
    if collector is not None:
        collector.add(write)


def install_write_hook() -> None:
    """Have :mod:`poolboy.kube` report writes to whichever run is collecting in the calling thread."""
    on_write(_on_write)


@contextmanager
def collecting(collector: Collector | None = None) -> Iterator[Collector]:
    """Collect the writes made in this thread (the reconcile) until the block ends."""
    collector = collector if collector is not None else Collector()
    token = _current.set(collector)
    try:
        yield collector
    finally:
        _current.reset(token)


@dataclass
class Promises:
    """The keys a run promised to wake at its end (:meth:`poolboy.context.Context.will_wake`): each promised once, in
    Redis, before the write it is made for."""

    own_writes: OwnWrites
    token: str
    keys: set[str] = field(default_factory=set)

    def __call__(self, key: str) -> None:
        if key in self.keys:
            return
        try:
            self.own_writes.promise(key, self.token)
        except redis.RedisError as error:  # only an optimisation: the key's events then run it as usual
            log.debug("promise to wake %s not recorded: %s", key, error)
            return
        self.keys.add(key)


# --- the scripts (both sides) -------------------------------------------------------------------------------------

# OBSERVE and WAKE compose the queue's ADD: ``pending``, ``active``, ``queue_list``, ``msg_id``, ``priority``,
# ``pending_ttl``, ``stale_ms``, ``now_ms`` and ``message`` are its values, by the names the queue gives them
# (:meth:`workqueue.queue.WorkQueue.add_values`)

#: ``write_id``: '' when the event cannot be an own write
OBSERVE = Script("engine/observe", keys=("pending", "active", "own_writes", "deferred", "promised", "held",
                                         "queue_list"),
                 args=("msg_id", "priority", "pending_ttl", "stale_ms", "now_ms", "write_id", "deferred_ttl",
                       "message"))
#: ``seen``: the run's write ids; ``token``: the run's lease token (its promise to wake the key ends); ``take``: the
#: lease token under which the waking run goes on with the key if it is idle ('' never), ``lease_ms`` that lease
WAKE = Script("engine/wake", keys=("pending", "active", "own_writes", "deferred", "promised", "held", "leases",
                                   "queue_list"),
              args=("msg_id", "priority", "pending_ttl", "stale_ms", "now_ms", "record_ttl", "deferred_ttl",
                    "message", "token", "take", "lease_ms", "key"), rest="seen")
NOTE = Script("engine/note", keys=("active", "own_writes", "deferred"), args=("record_ttl", "deferred_ttl"),
              rest="seen")
SETTLE = Script("engine/settle", keys=("pending", "active", "own_writes", "deferred"),
                args=("msg_id", "pending_ttl", "record_ttl"), rest="writes")


@dataclass(frozen=True)
class Settled:
    """SETTLE's answer: watch events deferred to the run, and how many of them were someone else's change."""

    deferred: int
    foreign: int


class OwnWrites:
    """The own-write steps of the watcher's intake and of a run's end, each composing the queue's ADD or preceding its
    DONE."""

    def __init__(self, queue: WorkQueue) -> None:
        self.queue = queue
        client = queue.redis
        self._observe = OBSERVE.register(client)
        self._wake = WAKE.register(client)
        self._note = NOTE.register(client)
        self._settle = SETTLE.register(client)

    @staticmethod
    def _keys(key: str) -> dict[str, str]:
        return {"own_writes": keyspace.own_writes(key), "deferred": keyspace.deferred_events(key)}

    @staticmethod
    def _promise_keys(key: str) -> dict[str, str]:
        return {"promised": keyspace.promised(key), "held": keyspace.held_events(key)}

    def observe_call(self, key: str, write_id: str | None) -> Call[Added]:
        """The watcher's step per key an event wakes: ADD, unless ``write_id`` is the key's own write or a run of the
        key is going on (then that run judges it at its end)."""
        return self._observe.call(read_added(key), **self.queue.add_values(key), **self._keys(key),
                                  **self._promise_keys(key), write_id=write_id or "", deferred_ttl=DEFERRED_TTL_S)

    def wake_call(self, key: str, seen: list[str], token: str = "", promised: bool = False,
                  take: str = "") -> Call[Added]:
        """ADD for a key a finishing run wakes, recording the run's write ids ``seen`` as the key's own first: their
        watch events wake the key too, but the run this ADD causes reads what they wrote. While a run of the key is
        going on the ids are deferred to it instead (outcome "deferred"): it runs again only if it did not get them.
        A key the run ``promised`` to wake (:meth:`promise`) has its promise ended and its held events covered.
        Given ``take``, a lease token, an idle key is not queued but leased under that token (outcome "continued"):
        the caller runs it next, in the same task."""
        if not seen and not promised and not take:
            return self.queue.add_call(key)
        return self._wake.call(read_added(key), **self.queue.add_values(key), **self._keys(key),
                               **self._promise_keys(key), record_ttl=RECORD_TTL_MS, deferred_ttl=DEFERRED_TTL_S,
                               token=token, take=take, leases=keyspace.LEASES, lease_ms=self.queue.lease_ms,
                               key=key, seen=seen)

    def promise(self, key: str, token: str) -> None:
        """The run holding ``token`` will wake ``key`` at its end (:meth:`wake_call`): until then the key's watch events
        are held for it (OBSERVE), so a write the run makes now does not run the key while the run is still writing.
        The promise lapses with the run's lease, should the run die (held events then make the key dirty for the
        sweeps, :func:`engine.sweeps.dirty_keys`)."""
        self.queue.redis.set(keyspace.promised(key), token, px=self.queue.lease_ms)

    def note_call(self, key: str, seen: list[str]) -> Call[Any]:
        """:meth:`wake_call`'s recording without the ADD, for a key the run holds for a window instead."""
        return self._note.call(active=keyspace.active(key), **self._keys(key), record_ttl=RECORD_TTL_MS,
                               deferred_ttl=DEFERRED_TTL_S, seen=seen)

    def settle_call(self, key: str, writes: list[str]) -> Call[Settled]:
        """A run's end, just before the queue's DONE and in the same script: record ``writes`` as the key's own and
        judge the events deferred to the run."""
        return self._settle.call(lambda reply: Settled(int(reply[0]), int(reply[1])), pending=keyspace.pending(key),
                                 active=keyspace.active(key), **self._keys(key), msg_id=new_id(),
                                 pending_ttl=self.queue.pending_ttl, record_ttl=RECORD_TTL_MS, writes=writes)

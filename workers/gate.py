"""The work gate: client-go workqueue semantics on Redis, one atomic Lua script per transition.

Per work key two Redis keys: ``gate:{<key>}:pending`` ("a run is owed") and ``gate:{<key>}:active`` ("a run is in
progress", a lease renewed by :class:`LeaseKeeper`). A key added N times before it runs runs once; a key added while
it runs runs exactly once more afterwards; two workers never run one key at once while the lease holds.

``pending`` is cleared at START, *before* the reconcile reads the object: every change the run might not see arrives
after START and re-marks ``pending``, so DONE publishes exactly one more run. A ZSET ``gate:leases`` (key -> lease
deadline) lets the beat sweep find runs whose holder died without DONE (SIGKILL of a pool child or of a whole
worker) and re-publish them within about one lease period: a lease-check message could only cover the first case,
because a hard-killed worker's message returns only after the transport's visibility timeout.

The rules in short, with the race each one closes: docs/behaviour.md#work-gate.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import redis

from cache.store import ScriptCall
from poolboy.settings import Settings
from workers import own_writes
from workers.scripting import evalsha_combined

log = logging.getLogger(__name__)

PREFIX = "gate:"
LEASES = "gate:leases"
#: priority classes; lower wins. Each maps to a Redis transport message priority (0 = highest).
CLASSES: dict[str, int] = {"event": 0, "resync": 1}
MESSAGE_PRIORITY: dict[int, int] = {0: 0, 1: 9}
#: ADD outcomes, in script return-code order; OBSERVE may also answer the last two (an event of the key's own write,
#: and one deferred to the key's run going on: :mod:`workers.own_writes`)
ADD_OUTCOMES = ("coalesced", "pending-while-running", "published", "own-write", "deferred")

_LUA = Path(__file__).with_name("lua")


@cache
def _source(name: str) -> str:
    return (_LUA / "common.lua").read_text() + "\n" + (_LUA / f"{name}.lua").read_text()


def pending_key(key: str) -> str:
    return f"{PREFIX}{{{key}}}:pending"


def active_key(key: str) -> str:
    return f"{PREFIX}{{{key}}}:active"


def new_id() -> str:
    return uuid.uuid4().hex


def clock_ms() -> int:
    """This host's clock for the gate's marks and lease deadlines (ADD, START): passing it saves the scripts a
    ``TIME`` each, one command per watch event and per run. A skew between hosts only shifts when a mark counts as
    stale (a minute) and the "waited" metric; the reaper judges a lease by its key's own TTL (``workers/lua``)."""
    return int(time.time() * 1000)


#: ``(key, msg_id, message priority) -> (queue list, message)``: a message the gate script pushes itself when it
#: decides one is owed (:class:`workers.messages.QueuedMessages`)
Encoder = Callable[[str, str, int], tuple[str, bytes]]


@dataclass(frozen=True)
class Publish:
    """The gate says: publish one ``reconcile(key)`` message with this task id and priority class (unless
    ``queued``: the gate script has pushed it already)."""

    key: str
    msg_id: str
    cls: int
    queued: bool = False

    @property
    def priority(self) -> int:
        return MESSAGE_PRIORITY[self.cls]


@dataclass(frozen=True)
class Started:
    """START succeeded; ``waited`` is how long the key's oldest pending mark waited (None if there was none)."""

    waited: float | None


@dataclass(frozen=True)
class Done:
    """DONE's answer: the re-run to publish (None: none owed, or the lease was someone else's), and how many watch
    events were deferred to the run and how many of those were someone else's change."""

    rerun: Publish | None
    deferred: int = 0
    foreign: int = 0


class Gate:
    """The four gate transitions plus the lease reaper, against one Redis client."""

    def __init__(self, client: redis.Redis, lease_seconds: float = 30.0, pending_ttl: float = 900.0,
                 stale_seconds: float = 60.0) -> None:
        self.redis = client
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.pending_ttl = max(1, int(pending_ttl))
        self.stale_ms = int(stale_seconds * 1000)
        self._add = client.register_script(_source("add"))
        self._wake = client.register_script(_source("wake"))
        self._observe = client.register_script(_source("observe"))
        self._start = client.register_script(_source("start"))
        self._done = client.register_script(_source("done"))
        self._renew = client.register_script(_source("renew"))
        self._reap = client.register_script(_source("reap"))
        self.renewer = _Renewer(self)
        #: set by the publisher: ADD and OBSERVE then push the message they decide is owed themselves
        self.encoder: Encoder | None = None

    @classmethod
    def from_settings(cls, settings: Settings, client: redis.Redis | None = None) -> Gate:
        from workers import redis_client

        return cls(client or redis_client.client(settings), settings.gate_lease_seconds,
                   settings.gate_pending_ttl, settings.gate_stale_seconds)

    @property
    def lease_seconds(self) -> float:
        return self.lease_ms / 1000

    # --- ADD -------------------------------------------------------------------------------------------------

    def _add_args(self, key: str, priority: str) -> tuple[list[str], list[Any]]:
        return [pending_key(key), active_key(key)], [new_id(), CLASSES[priority], self.pending_ttl, self.stale_ms,
                                                     clock_ms()]

    def _pushed(self, key: str, priority: str, keys: list[str], args: list[Any], push: bool) -> None:
        """Append the queue list (last key) and the message (last argument) when the script is to push it."""
        if push and self.encoder is not None:
            queue_list, message = self.encoder(key, str(args[0]), MESSAGE_PRIORITY[CLASSES[priority]])
            keys.append(queue_list)
            args.append(message)

    @staticmethod
    def add_result(key: str, reply: list) -> tuple[str, Publish | None]:
        """What ADD's (or OBSERVE's) reply says: the outcome, and the run to publish unless the script pushed it."""
        outcome = ADD_OUTCOMES[int(reply[0])]
        if outcome != "published":
            return outcome, None
        return outcome, Publish(key, _text(reply[1]), int(reply[2]), queued=len(reply) > 3 and int(reply[3]) == 1)

    def add(self, key: str, priority: str = "event", push: bool = True) -> tuple[str, Publish | None]:
        """Record that ``key`` needs a run. Returns the outcome and, if published, what the caller must publish
        (nothing more when ``push`` and an encoder let the script push the message itself)."""
        keys, args = self._add_args(key, priority)
        self._pushed(key, priority, keys, args, push)
        return self.add_result(key, self._add(keys=keys, args=args))

    def add_many(self, keys: Iterable[str], priority: str = "event",
                 push: bool = True) -> list[tuple[str, Publish | None]]:
        """ADD for many keys in one round trip, as few EVALSHAs (a sweep adds every key of a kind)."""
        keys = list(keys)
        if not keys:
            return []
        replies = evalsha_combined(self.redis, [self.add_call(key, priority, push) for key in keys])
        return [self.add_result(key, reply) for key, reply in zip(keys, replies, strict=True)]

    def add_call(self, key: str, priority: str = "event", push: bool = True) -> ScriptCall:
        """ADD as (script, keys, args), for a caller that pipelines it with other scripts; :meth:`add_result`
        reads its reply."""
        script_keys, args = self._add_args(key, priority)
        self._pushed(key, priority, script_keys, args, push)
        return self._add, script_keys, args

    def wake_call(self, key: str, seen: Sequence[str], push: bool = True) -> ScriptCall:
        """:meth:`add_call` for a key a finishing run wakes, recording the run's write ids ``seen`` as the key's
        own first: the watch events of those writes wake the key too, but the run that follows this ADD reads what
        they wrote (its writes are in the cache by then, put in the same round trip before this), so they are
        dropped as its own writes would be, instead of running the key once more when they arrive after it began.
        While a run of the key is going on, the ids are deferred to it instead (outcome "deferred"): it runs again
        only if it did not get those versions. :meth:`add_result` reads its reply."""
        if not seen:
            return self.add_call(key, push=push)
        keys, args = self._add_args(key, "event")
        keys += [own_writes.records_key(key), own_writes.deferred_key(key)]
        args += [own_writes.RECORD_TTL_MS, own_writes.DEFERRED_TTL_S, len(seen), *seen]
        self._pushed(key, "event", keys, args, push)
        return self._wake, keys, args

    def observe_call(self, key: str, write_id: str | None) -> ScriptCall:
        """The OBSERVE script and its keys and arguments, for a caller that pipelines it with other commands (the
        watcher's intake): ADD for ``key``, unless ``write_id`` is the key's own write or a run of the key is
        going on (then that run judges it at DONE). :meth:`add_result` reads its reply."""
        keys, args = self._add_args(key, "event")
        keys += [own_writes.records_key(key), own_writes.deferred_key(key)]
        args += [write_id or "", own_writes.DEFERRED_TTL_S]
        self._pushed(key, "event", keys, args, push=True)
        return self._observe, keys, args

    # --- START / DONE / RENEW --------------------------------------------------------------------------------

    def start(self, key: str, token: str, msg_id: str | None = None) -> Started | None:
        """Take the key's lease; None when another run holds it (the key is then marked pending for it)."""
        script, keys, args = self.start_call(key, token, msg_id)
        return self.start_result(script(keys=keys, args=args))

    def start_call(self, key: str, token: str, msg_id: str | None = None) -> ScriptCall:
        """:meth:`start` as (script, keys, args), for a caller that pipelines the run's first reads after it;
        :meth:`start_result` reads its reply."""
        return (self._start, [pending_key(key), active_key(key), LEASES],
                [token, self.lease_ms, key, self.pending_ttl, msg_id or new_id(), clock_ms()])

    @staticmethod
    def start_result(reply: list) -> Started | None:
        if int(reply[0]) != 1:
            return None
        waited_ms = int(reply[1])
        return Started(waited_ms / 1000 if waited_ms >= 0 else None)

    def done(self, key: str, token: str, also_delete: str | Sequence[str] = (), mark_clean: str = "",
             writes: Sequence[str] = (), mark_dirty: str = "") -> Done:
        """Settle the run's own writes and release the lease if it is still ours, in one script; the result names
        the one re-run to publish when the key was re-marked (by an event, or by a deferred event that was not one
        of ``writes``: :mod:`workers.own_writes`).

        ``writes`` are the ids of the run's recordable writes; ``also_delete`` names keys to delete in the same
        round trip (a successful run's backoff counter, its logged-error memory); ``mark_clean`` the object's
        hash in the shared cache, whose current version is then recorded as reconciled
        (:func:`workers.sweeps.dirty_keys`); ``mark_dirty`` that hash, whose record is then dropped (a run whose retry
        only a countdown message carries: the sweeps run it again should that message be lost)."""
        script, keys, args = self.done_call(key, token, also_delete, mark_clean, writes, mark_dirty)
        return self.done_result(key, script(keys=keys, args=args))

    def done_call(self, key: str, token: str, also_delete: str | Sequence[str] = (), mark_clean: str = "",
                  writes: Sequence[str] = (), mark_dirty: str = "") -> ScriptCall:
        """:meth:`done` as (script, keys, args), for a caller that pipelines it after the run's other Redis work;
        :meth:`done_result` reads its reply."""
        extra = [also_delete] if isinstance(also_delete, str) else list(also_delete or ())
        return (self._done, [pending_key(key), active_key(key), LEASES, own_writes.records_key(key),
                             own_writes.deferred_key(key), *extra],
                [token, new_id(), key, self.pending_ttl, mark_clean, own_writes.RECORD_TTL_MS, mark_dirty, *writes])

    @staticmethod
    def done_result(key: str, reply: list) -> Done:
        rerun = Publish(key, _text(reply[1]), int(reply[2])) if int(reply[0]) == 2 else None
        return Done(rerun, deferred=int(reply[3]), foreign=int(reply[4]))

    def renew(self, key: str, token: str) -> bool:
        """Extend the lease; False means it was lost (expired, or taken by another run)."""
        return bool(self._renew(keys=[active_key(key), LEASES], args=[token, self.lease_ms, key]))

    # --- recovery and observation ----------------------------------------------------------------------------

    def reap(self, limit: int = 1000) -> list[Publish]:
        """Re-arm keys whose lease expired without DONE; returns the messages to publish."""
        reply = self._reap(keys=[LEASES], args=[limit, self.pending_ttl, new_id(), PREFIX])
        return [Publish(_text(reply[i]), _text(reply[i + 1]), int(reply[i + 2])) for i in range(0, len(reply), 3)]

    def pending_stats(self, scan_limit: int = 10000) -> tuple[int, float]:
        """(number of pending marks, age in seconds of the oldest), from a bounded SCAN: for metrics only."""
        count, oldest_ms = 0, None
        now_ms = int(time.time() * 1000)
        for name in self.redis.scan_iter(match=f"{PREFIX}{{*}}:pending", count=1000):
            count += 1
            value = self.redis.get(name)
            if value:
                ts = int(_text(value).split("|")[1])
                oldest_ms = ts if oldest_ms is None else min(oldest_ms, ts)
            if count >= scan_limit:
                break
        return count, (max(0, now_ms - oldest_ms) / 1000 if oldest_ms is not None else 0.0)


class LeaseKeeper:
    """Keeps a run's lease renewed every lease/3 while the block runs, up to ``time_limit`` seconds; ``lost`` is set
    when a renewal fails or the run outlives its limit.

    A reconcile that sees ``lost`` should stop writing and finish: another run may already hold the key (the API
    server's resourceVersion preconditions remain the real safety net). The renewals of every run of a process are
    made by one daemon thread of the gate (:class:`_Renewer`): nearly every run ends long before its first renewal
    is due, so a thread per run would be started and joined for nothing.
    """

    def __init__(self, gate: Gate, key: str, token: str, time_limit: float | None = None) -> None:
        self.gate, self.key, self.token = gate, key, token
        self.time_limit = time_limit
        self.started = time.monotonic()
        self.lost = threading.Event()
        self.due = 0.0  # monotonic time of the next renewal (the renewer's bookkeeping)

    def __enter__(self) -> LeaseKeeper:
        self.gate.renewer.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.gate.renewer.remove(self)


class _Renewer:
    """One daemon thread renewing the leases of the runs in progress on one gate (a process has one gate), started
    by the first run."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.interval = gate.lease_seconds / 3
        self.keepers: set[LeaseKeeper] = set()
        self.changed = threading.Condition()
        self.thread: threading.Thread | None = None

    def add(self, keeper: LeaseKeeper) -> None:
        """No need to wake the thread: it never sleeps longer than one interval, and a new keeper is due one
        interval from now, no earlier than any other (waking it per run cost a GIL hand-over for nothing)."""
        keeper.due = time.monotonic() + self.interval
        with self.changed:
            self.keepers.add(keeper)
            if self.thread is None or not self.thread.is_alive():  # first use, or after a fork
                self.thread = threading.Thread(target=self._run, name="lease renewer", daemon=True)
                self.thread.start()

    def remove(self, keeper: LeaseKeeper) -> None:
        with self.changed:
            self.keepers.discard(keeper)

    def _run(self) -> None:
        while True:
            with self.changed:
                now = time.monotonic()
                due = [k for k in self.keepers if k.due <= now]
                if not due:
                    nearest = min((k.due for k in self.keepers), default=now + self.interval)
                    self.changed.wait(max(0.001, nearest - now))
                    continue
            for keeper in due:
                self._renew(keeper)

    def _renew(self, keeper: LeaseKeeper) -> None:
        now = time.monotonic()
        keeper.due = now + self.interval
        if keeper.time_limit is not None and now - keeper.started > keeper.time_limit:
            # past the hard time limit, which no pool but prefork enforces: let the lease lapse, so the reaper
            # hands the key to another run while this one is stuck
            log.warning("%s: run still going after its %gs time limit; its lease is left to expire",
                        keeper.key, keeper.time_limit)
            keeper.lost.set()
            self.remove(keeper)
            return
        try:
            if not self.gate.renew(keeper.key, keeper.token):
                keeper.lost.set()
                self.remove(keeper)
        except redis.RedisError:
            pass  # a blip: the next tick retries; the lease outlives two missed renewals


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value

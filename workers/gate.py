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

import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import redis

from poolboy.settings import Settings

PREFIX = "gate:"
LEASES = "gate:leases"
#: priority classes; lower wins. Each maps to a Redis transport message priority (0 = highest).
CLASSES: dict[str, int] = {"event": 0, "resync": 1}
MESSAGE_PRIORITY: dict[int, int] = {0: 0, 1: 9}
#: ADD outcomes, in script return-code order
ADD_OUTCOMES = ("coalesced", "pending-while-running", "published")

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


@dataclass(frozen=True)
class Publish:
    """The gate says: publish one ``reconcile(key)`` message with this task id and priority class."""

    key: str
    msg_id: str
    cls: int

    @property
    def priority(self) -> int:
        return MESSAGE_PRIORITY[self.cls]


@dataclass(frozen=True)
class Started:
    """START succeeded; ``waited`` is how long the key's oldest pending mark waited (None if there was none)."""

    waited: float | None


class Gate:
    """The four gate transitions plus the lease reaper, against one Redis client."""

    def __init__(self, client: redis.Redis, lease_seconds: float = 30.0, pending_ttl: float = 900.0,
                 stale_seconds: float = 60.0) -> None:
        self.redis = client
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.pending_ttl = max(1, int(pending_ttl))
        self.stale_ms = int(stale_seconds * 1000)
        self._add = client.register_script(_source("add"))
        self._start = client.register_script(_source("start"))
        self._done = client.register_script(_source("done"))
        self._renew = client.register_script(_source("renew"))
        self._reap = client.register_script(_source("reap"))

    @classmethod
    def from_settings(cls, settings: Settings, client: redis.Redis | None = None) -> Gate:
        from workers import redis_client

        return cls(client or redis_client.client(settings), settings.gate_lease_seconds,
                   settings.gate_pending_ttl, settings.gate_stale_seconds)

    @property
    def lease_seconds(self) -> float:
        return self.lease_ms / 1000

    # --- ADD -------------------------------------------------------------------------------------------------

    def _add_args(self, key: str, priority: str) -> tuple[list[str], list[str | int]]:
        return [pending_key(key), active_key(key)], [new_id(), CLASSES[priority], self.pending_ttl, self.stale_ms]

    @staticmethod
    def _add_result(key: str, reply: list) -> tuple[str, Publish | None]:
        outcome = ADD_OUTCOMES[int(reply[0])]
        if outcome != "published":
            return outcome, None
        return outcome, Publish(key, _text(reply[1]), int(reply[2]))

    def add(self, key: str, priority: str = "event") -> tuple[str, Publish | None]:
        """Record that ``key`` needs a run. Returns the outcome and, if published, what the caller must publish."""
        keys, args = self._add_args(key, priority)
        return self._add_result(key, self._add(keys=keys, args=args))

    def add_many(self, keys: Iterable[str], priority: str = "event") -> list[tuple[str, Publish | None]]:
        """ADD for many keys in one pipelined round trip (each script still atomic on its own)."""
        keys = list(keys)
        if not keys:
            return []
        calls = [self._add_args(key, priority) for key in keys]
        replies = _evalsha_pipelined(self.redis, self._add, calls)
        return [self._add_result(key, reply) for key, reply in zip(keys, replies, strict=True)]

    # --- START / DONE / RENEW --------------------------------------------------------------------------------

    def start(self, key: str, token: str, msg_id: str | None = None) -> Started | None:
        """Take the key's lease; None when another run holds it (the key is then marked pending for it)."""
        reply = self._start(keys=[pending_key(key), active_key(key), LEASES],
                            args=[token, self.lease_ms, key, self.pending_ttl, msg_id or new_id()])
        if int(reply[0]) != 1:
            return None
        waited_ms = int(reply[1])
        return Started(waited_ms / 1000 if waited_ms >= 0 else None)

    def done(self, key: str, token: str, also_delete: str | Sequence[str] = (), mark_clean: str = "") -> Publish | None:
        """Release the lease if it is still ours; returns the one re-run to publish when the key was re-marked.

        ``also_delete`` names keys to delete in the same round trip (a successful run's backoff counter, its
        logged-error memory); ``mark_clean`` the object's hash in the shared cache, whose current version is then
        recorded as reconciled (:func:`workers.sweeps.dirty_keys`)."""
        extra = [also_delete] if isinstance(also_delete, str) else list(also_delete or ())
        reply = self._done(keys=[pending_key(key), active_key(key), LEASES, *extra],
                           args=[token, new_id(), key, self.pending_ttl, mark_clean])
        if int(reply[0]) != 2:
            return None
        return Publish(key, _text(reply[1]), int(reply[2]))

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
    """Renews a run's lease every lease/3 on a daemon thread; ``lost`` is set when a renewal fails.

    A reconcile that sees ``lost`` should stop writing and finish: another run may already hold the key (the API
    server's resourceVersion preconditions remain the real safety net).
    """

    def __init__(self, gate: Gate, key: str, token: str) -> None:
        self.gate, self.key, self.token = gate, key, token
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease:{key}", daemon=True)

    def _run(self) -> None:
        interval = self.gate.lease_seconds / 3
        while not self._stop.wait(interval):
            try:
                if not self.gate.renew(self.key, self.token):
                    self.lost.set()
                    return
            except redis.RedisError:
                continue  # a blip: the next tick retries; the lease outlives two missed renewals

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _evalsha_pipelined(client: redis.Redis, script: Any,
                       calls: Sequence[tuple[Sequence[str], Sequence[Any]]]) -> list[Any]:
    """One script for many (keys, args) in one pipelined round trip.

    redis-py's pipeline asks ``SCRIPT EXISTS`` for its scripts before every execution (one more command each time);
    the script is there after its first use, so send EVALSHA directly and load it only on the NOSCRIPT of a Redis
    that restarted or was flushed."""
    for attempt in (1, 2):
        pipe = client.pipeline(transaction=False)
        for keys, args in calls:
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        try:
            return pipe.execute()
        except redis.exceptions.NoScriptError:
            if attempt == 2:
                raise
            client.script_load(script.script)
    raise AssertionError("unreachable")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value

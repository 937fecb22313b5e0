"""Warm binding from Redis: the unbound-handle summaries the watcher keeps per scope, and atomic reservations.

:mod:`poolboy.domain.binding.candidates` ranks; this module only reads the summaries (one HGETALL) and reserves a
candidate with one Lua call, so two claims never try the same handle at once. The reservation is advisory: the
conditional bind patch on the API (a ``test`` of the handle's resourceVersion) stays the arbiter, a failed bind releases
it, and a worker that dies holding one only delays that handle by the reservation's TTL.

Claims that wait for a handle (``waiting|<scope>``, in creation order) are served oldest first: a claim may
reserve only while fewer older claims wait than the scope has unbound handles, so a handle that appears goes to
the oldest waiting claim instead of to whichever run happens first.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson
import redis

from cache import model as cache_model
from cache.store import read_if_synced
from poolboy.domain.binding import candidates
from poolboy.domain.binding.candidates import QueueState, Reservation, Snapshot
from poolboy.domain.binding.queue_order import Waiter
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE
from redisscripts import Script
from workqueue import keyspace

#: how many candidate names one reservation call carries
_RESERVE_BATCH = 32
#: a process keeps at most this many scopes' snapshots (a few pools and providers in practice)
_MAX_SNAPSHOTS = 256

#: every key comes as an argument (the handles' are only known in the script): ``reservation_prefix`` and
#: ``object_prefix`` start the keys of a handle's reservation and cached object, by handle id; ``waiting``, ``unbound``
#: and ``bound`` are the scope's indexes; ``position`` the claim's under a queue policy ('' for oldest first); ``cap``
#: the claim's namespace's ('' for none); ``members`` the candidates' handle ids, best first
RESERVE = Script("cache/reserve", args=("reservation_prefix", "ttl_ms", "claim", "waiting", "unbound", "object_prefix",
                                        "position", "cap", "bound", "namespace_reservations"), rest="members")
RELEASE = Script("cache/release", keys=("reservation", "namespace_reservations"), args=("claim", "handle"))


class RedisHandleIndex:
    """:class:`poolboy.domain.binding.candidates.HandleIndex` on the shared cache, one per process (its snapshots
    serve every run); a run uses it through :meth:`for_run`."""

    def __init__(self, client: redis.Redis, api_version: str, namespace: str, *, ttl_s: float = 30.0) -> None:
        self.redis = client
        self.api_version = api_version
        self.namespace = namespace
        self.ttl_ms = int(ttl_s * 1000)
        self._reserve = RESERVE.register(client)
        self._release = RELEASE.register(client)
        #: (scope, fallbacks) -> the last summaries read: see :meth:`summaries`
        self._snapshots: dict[tuple[str, tuple[str, ...]], Snapshot] = {}
        self._lock = threading.Lock()

    def for_run(self, prime: Callable[[dict], None]) -> RunHandleIndex:
        """This index as the run whose reader ``prime`` answers gets uses it (see :class:`RunHandleIndex`)."""
        return RunHandleIndex(self, prime)

    def _handle_id(self, name: str) -> str:
        return cache_model.object_id(self.api_version, RESOURCE_HANDLE, self.namespace, name)

    def summaries(self, binding_scope: str, *fallbacks: str, max_age: float = 0.0) -> Snapshot | None:
        """Unbound handles of a scope by name (with those of ``fallbacks`` it lacks), or None when the cache cannot
        be trusted (then list from the API); one round trip, or none when a snapshot of this process no older than
        ``max_age`` seconds can answer.

        Why snapshots: every claim run of a burst read the scope's whole index (one HGETALL of every unbound
        handle's summary, about 250 bytes each) to rank it, so a burst of N claims on a pool of N handles moved N²
        summaries through Redis and the workers. A snapshot is never changed once taken (the handles this process
        reserves are left out of a new one), so rankers in other threads may hold it while it is replaced; what
        it misses is caught by the reservation script (a handle bound meanwhile is no longer in the live index)
        and by the caller, which reads afresh before it concludes that no handle is free."""
        key = (binding_scope, fallbacks)
        if max_age > 0:
            with self._lock:
                found = self._snapshots.get(key)
            if found is not None and time.monotonic() - found.read_at <= max_age:
                return found
        scopes = [*fallbacks, binding_scope]  # later scopes' entries win
        indexes = [keyspace.cache_index(f"{candidates.UNBOUND}|{scope}") for scope in scopes]

        def read(pipe: redis.client.Pipeline) -> None:
            for index in indexes:
                pipe.hgetall(index)

        taken_at = time.monotonic()
        replies = read_if_synced(self.redis, self.api_version, RESOURCE_HANDLE, self.namespace, read)
        if replies is None:
            return None
        merged: dict[str, dict] = {}
        for entries in (replies if len(indexes) > 1 else [replies]):
            merged.update({member.decode().rsplit("|", 1)[1]: orjson.loads(value)
                           for member, value in entries.items()})
        snapshot = Snapshot(merged, taken_at)
        with self._lock:
            if len(self._snapshots) >= _MAX_SNAPSHOTS:
                self._snapshots.clear()
            self._snapshots[key] = snapshot
        return snapshot

    def _forget(self, *names: str) -> None:
        """Handles taken (by this process or another) leave this process's snapshots (replaced, never changed: see
        :meth:`summaries`)."""
        if not names:
            return
        with self._lock:
            for key, snapshot in list(self._snapshots.items()):
                if any(name in snapshot for name in names):
                    self._snapshots[key] = snapshot.without(names)

    def reserve(self, binding_scope: str, names: Iterable[str], claim: dict, position: int | None = None,
                cap: int | None = None) -> Reservation:
        """The first of ``names`` (best first) that no other claim holds, asked :data:`_RESERVE_BATCH` names at a
        time: the best is nearly always free, and a pool of thousands need not cross the wire per claim. Names are
        taken from ``names`` only as far as a batch needs them (a ranking is lazy); those of the last batch after
        the one reserved come back in :attr:`Reservation.untried`."""
        claim_id = cache_model.identity(claim)
        namespace = (claim.get("metadata") or {}).get("namespace") or ""
        remaining = iter(names)
        while batch := list(itertools.islice(remaining, _RESERVE_BATCH)):
            outcome = self._reserve.run(
                reservation_prefix=keyspace.RESERVATIONS, ttl_ms=self.ttl_ms, claim=claim_id,
                waiting=keyspace.cache_index(f"{candidates.WAITING}|{binding_scope}"),
                unbound=keyspace.cache_index(f"{candidates.UNBOUND}|{binding_scope}"),
                object_prefix=keyspace.CACHE_OBJECTS, position="" if position is None else position,
                cap="" if cap is None else cap,
                bound=keyspace.cache_index(f"{candidates.BOUND}|{binding_scope}|{namespace}"),
                namespace_reservations=keyspace.namespace_reservations(binding_scope, namespace),
                members=[self._handle_id(name) for name in batch])
            verdict = outcome[0].decode()
            if verdict in ("wait", "capped"):
                return Reservation(wait=True, capped=verdict == "capped")
            doc = outcome[1] if verdict == "ok" else b""
            passed = [member.decode().rsplit("|", 1)[1] for member in outcome[2 if verdict == "ok" else 1:]]
            self._forget(*passed)  # the reserved one, and those bound or held by others: no other claim here tries them
            if verdict == "ok":
                return Reservation(name=passed[0], handle=orjson.loads(doc) if doc else None,
                                   untried=tuple(batch[batch.index(passed[0]) + 1:]))
        return Reservation()

    def queue_position(self, binding_scope: str, claim: dict) -> tuple[int, int] | None:
        """One round trip: the claim's rank in ``waiting|<scope>``, else how many older claims wait (a claim
        labelled waiting a moment ago is not in the queue until the watcher sees the label), and its length."""
        queue = keyspace.cache_index(f"{candidates.WAITING}|{binding_scope}")
        member = cache_model.identity(claim)
        score = candidates.queue_score(claim)
        reply = read_if_synced(self.redis, self.api_version, RESOURCE_CLAIM, None,
                               lambda pipe: (pipe.zrank(queue, member), pipe.zcount(queue, "-inf", f"({score!r}"),
                                             pipe.zcard(queue)))
        if reply is None:
            return None
        rank, older, waiting = reply
        if rank is not None:
            return rank + 1, waiting
        return older + 1, waiting + 1

    def created_since(self, scope: str, since: Sequence[float]) -> list[int] | None:
        """One round trip: a ZCOUNT of ``created|<scope>`` per time."""
        key = keyspace.cache_index(f"{candidates.CREATED}|{scope}")

        def counts(pipe: Any) -> None:
            for moment in since:
                pipe.zcount(key, repr(moment), "+inf")

        reply = read_if_synced(self.redis, self.api_version, RESOURCE_HANDLE, self.namespace, counts)
        if reply is None:
            return None
        return [int(count) for count in (reply if len(since) > 1 else [reply])]

    def waiting_heads(self, scopes: Sequence[str]) -> list[tuple[str, str]] | None:
        """Two round trips: how many unbound handles each scope has, then that many of its oldest waiting claims
        (each read only when the cache has listed its kind)."""
        def counts(pipe: Any) -> None:
            for scope in scopes:
                pipe.hlen(keyspace.cache_index(f"{candidates.UNBOUND}|{scope}"))

        reply = read_if_synced(self.redis, self.api_version, RESOURCE_HANDLE, self.namespace, counts)
        if reply is None:
            return None
        free = [(scope, int(count)) for scope, count in zip(scopes, reply if len(scopes) > 1 else [reply],
                                                             strict=True) if count]
        if not free:
            return []

        def oldest(pipe: Any) -> None:
            for scope, count in free:
                pipe.zrange(keyspace.cache_index(f"{candidates.WAITING}|{scope}"), 0, count - 1)

        queues = read_if_synced(self.redis, self.api_version, RESOURCE_CLAIM, None, oldest)
        if queues is None:
            return None
        heads = dict.fromkeys(member.decode() for members in (queues if len(free) > 1 else [queues])
                              for member in members)
        return [(namespace, name) for _, _, namespace, name in (member.rsplit("|", 3) for member in heads)]

    def queue_state(self, binding_scope: str) -> QueueState | None:
        """Two round trips: the scope's waiting claims and the priority classes they ask for; then its unbound
        handles and how many handles each of their namespaces holds in it."""
        queue = keyspace.cache_index(f"{candidates.WAITING}|{binding_scope}")
        first = read_if_synced(self.redis, self.api_version, RESOURCE_CLAIM, None, lambda pipe: (
            pipe.zrange(queue, 0, -1, withscores=True),
            pipe.hgetall(keyspace.cache_index(f"{candidates.PRIORITY}|{binding_scope}"))))
        if first is None:
            return None
        members, priorities = first
        waiters = []
        for member, score in members:
            _, _, namespace, name = member.decode().rsplit("|", 3)
            asked = priorities.get(member)
            waiters.append(Waiter(namespace, name, float(score), asked.decode() if asked is not None else None))
        namespaces = sorted({w.namespace for w in waiters})

        def held(pipe: Any) -> None:
            pipe.hlen(keyspace.cache_index(f"{candidates.UNBOUND}|{binding_scope}"))
            for namespace in namespaces:
                pipe.zcard(keyspace.cache_index(f"{candidates.BOUND}|{binding_scope}|{namespace}"))

        counts = read_if_synced(self.redis, self.api_version, RESOURCE_HANDLE, self.namespace, held)
        if counts is None:
            return None
        free, *bound = counts if namespaces else [counts]
        return QueueState(waiters, {ns: int(c) for ns, c in zip(namespaces, bound, strict=True)}, int(free))

    def release(self, name: str, claim: dict, binding_scope: str = "") -> None:
        handle_id = self._handle_id(name)
        namespace = (claim.get("metadata") or {}).get("namespace") or ""
        self._release.run(reservation=keyspace.reservation(handle_id),
                          namespace_reservations=keyspace.namespace_reservations(binding_scope, namespace),
                          claim=cache_model.identity(claim), handle=handle_id)


class RunHandleIndex:
    """The process's index as one run uses it: the handle a reservation brought along goes to the run's reader
    (``prime``), so the run's get of it that follows needs no round trip of its own."""

    def __init__(self, shared: RedisHandleIndex, prime: Callable[[dict], None]) -> None:
        self._shared = shared
        self._prime = prime

    def reserve(self, binding_scope: str, names: Iterable[str], claim: dict, position: int | None = None,
                cap: int | None = None) -> Reservation:
        reservation = self._shared.reserve(binding_scope, names, claim, position, cap)
        if reservation.handle is not None:
            self._prime(reservation.handle)
        return reservation

    def summaries(self, binding_scope: str, *fallbacks: str, max_age: float = 0.0) -> Snapshot | None:
        return self._shared.summaries(binding_scope, *fallbacks, max_age=max_age)

    def release(self, name: str, claim: dict, binding_scope: str = "") -> None:
        self._shared.release(name, claim, binding_scope)

    def created_since(self, scope: str, since: Sequence[float]) -> list[int] | None:
        return self._shared.created_since(scope, since)

    def queue_position(self, binding_scope: str, claim: dict) -> tuple[int, int] | None:
        return self._shared.queue_position(binding_scope, claim)

    def waiting_heads(self, scopes: Sequence[str]) -> list[tuple[str, str]] | None:
        return self._shared.waiting_heads(scopes)

    def queue_state(self, binding_scope: str) -> QueueState | None:
        return self._shared.queue_state(binding_scope)

"""Kubernetes Events as client-go's EventCorrelator sees them: the Event body, its keys, and the correlation.

Pure and clock-injected, so the decisions are unit-tested; :mod:`poolboy.kube.event_recorder` sends what they decide,
off the reconcile's thread. The semantics are client-go's ``tools/record`` ones, with its default numbers:

* **Series (client-go's event logger).** Occurrences with the same *event key* — source, involved object (kind,
  namespace, name, uid, apiVersion, fieldPath), type, reason, message, and the Event's own namespace — are one
  Event on the server: the first is created, each later one bumps its ``count`` and ``lastTimestamp`` (a PATCH,
  which the recorder may fold into one when several occur before it sends). Unlike client-go, whose cache has no
  time limit, a repeat after :data:`WINDOW_SECONDS` of quiet starts a new Event: the API server's Event TTL (1 h
  by default) may have removed the old one, and "x3 over 2h" would mislead anyway.
* **Aggregation (client-go's EventAggregator).** Occurrences that differ only in their message are counted per
  *aggregate key* (source, involved object, type, reason, reporting controller and instance) within the window;
  from the :data:`AGGREGATE_MAX_EVENTS`-th distinct message on, they go into one "(combined from similar events)"
  Event carrying the latest message, so an object whose messages vary (a count, a name) cannot flood the API.
* **Spam filter (client-go's EventSourceObjectSpamFilter).** A token bucket per source and involved object:
  :data:`SPAM_BURST` requests, refilled at one per five minutes (an occurrence folded into a send already owed
  takes none). An occurrence beyond it is not sent, but still counted in its series, so the next request about
  that Event carries the full count.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Generic, TypeVar, cast

import orjson

#: client-go's defaults (``tools/record/events_cache.go``)
CACHE_SIZE = 4096
AGGREGATE_MAX_EVENTS = 10
WINDOW_SECONDS = 600.0
SPAM_BURST = 25
SPAM_REFILL_PER_SECOND = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "
#: the API server rejects larger messages in events.k8s.io; core/v1 keeps the same bound here
MESSAGE_LIMIT = 1024

K = TypeVar("K")
V = TypeVar("V")


# --- the Event body ----------------------------------------------------------------------------------------------


def event_body(obj: dict, reason: str, message: str, *, type: str = "Normal", action: str | None = None,
               component: str = "poolboy", default_namespace: str, now: datetime | None = None) -> dict:
    """A core/v1 Event about ``obj`` with count 1. A cluster-scoped object's Events go to ``default_namespace``
    (the operator namespace), as Events must live in a namespace."""
    metadata = obj.get("metadata") or {}
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    involved = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": metadata.get("name"),
                "namespace": metadata.get("namespace"), "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion")}
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": _fresh_name(metadata.get("name")),
                     "namespace": metadata.get("namespace") or default_namespace},
        "involvedObject": {k: v for k, v in involved.items() if v},
        "reason": reason, "message": message[:MESSAGE_LIMIT], "type": type,
        "action": action or reason,
        "source": {"component": component},
        "reportingComponent": component, "reportingInstance": os.environ.get("HOSTNAME", component),
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }


def _fresh_name(object_name: str | None) -> str:
    return f"{object_name or 'object'}.{uuid.uuid4().hex[:16]}"


# --- keys --------------------------------------------------------------------------------------------------------


def _digest(*parts: object) -> bytes:
    """A 16-byte key for a tuple of fields: thousands of keys stay small (the fields themselves run to hundreds of
    bytes), and a collision is as likely as a uuid's."""
    return hashlib.blake2b("\x00".join(str(p) for p in parts).encode(), digest_size=16).digest()


def _source_and_object(body: dict) -> tuple[object, ...]:
    source = body.get("source") or {}
    involved = body.get("involvedObject") or {}
    return (source.get("component", ""), source.get("host", ""), involved.get("kind", ""),
            involved.get("namespace", ""), involved.get("name", ""), involved.get("uid", ""),
            involved.get("apiVersion", ""), (body.get("metadata") or {}).get("namespace", ""))


def spam_key(body: dict) -> bytes:
    """Who reports about which object: the spam filter's bucket."""
    return _digest("spam", *_source_and_object(body))


def event_key(body: dict) -> bytes:
    """What makes two occurrences the same Event (its resourceVersion is deliberately not part of it)."""
    involved = body.get("involvedObject") or {}
    return _digest("event", *_source_and_object(body), involved.get("fieldPath", ""), body.get("type", ""),
                   body.get("reason", ""), body.get("message", ""))


def aggregate_key(body: dict) -> bytes:
    """The same Event up to its message: occurrences counted towards aggregation."""
    return _digest("aggregate", *_source_and_object(body), body.get("type", ""), body.get("reason", ""),
                   body.get("reportingComponent", ""), body.get("reportingInstance", ""))


# --- bounded state -----------------------------------------------------------------------------------------------


class LRU(Generic[K, V]):
    """A dict of at most ``size`` entries that forgets the least recently used one (client-go's caches are LRUs
    of 4096, so a long-lived process's memory stays bounded whatever the number of objects)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def prune(self, stale: Callable[[V], bool]) -> None:
        """Forget entries from the least recently used end while ``stale`` says they can no longer matter, so a
        quiet process holds little rather than a full cache."""
        while self._items and stale(next(iter(self._items.values()))):
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass(slots=True)
class TokenBucket:
    """``burst`` tokens, refilled continuously at ``rate`` per second; taking one is allowed while one is left."""

    burst: float
    rate: float
    tokens: float
    stamp: float

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


@dataclass(slots=True)
class Series:
    """One Event on the server (or about to be): its first body and what later occurrences changed.

    The first body is kept as a JSON string, a quarter of the dict's memory (a full cache of 4096 series costs
    about 7 MB; orjson's own bytes would keep its 4 KiB buffer each, hence the ``decode``). ``created`` says
    whether the server has it (so the next send is a PATCH, not a POST); ``queued`` that a send is owed or in
    flight (so another occurrence only bumps the count); ``sent_count`` the count the server last accepted. The
    recorder owns these three; the correlator only counts.
    """

    raw: str
    name: str
    namespace: str
    spam_key: bytes
    count: int
    last_timestamp: str
    message: str
    last_seen: float
    created: bool = False
    queued: bool = False
    sent_count: int = 0

    @classmethod
    def start(cls, body: dict, now: float) -> Series:
        metadata = body["metadata"]
        return cls(raw=orjson.dumps(body).decode(), name=metadata["name"], namespace=metadata["namespace"],
                   spam_key=spam_key(body), count=int(body.get("count") or 1), last_timestamp=body["lastTimestamp"],
                   message=body["message"], last_seen=now)

    def repeat(self, body: dict, now: float) -> None:
        self.count += 1
        self.last_timestamp = body["lastTimestamp"]
        self.message = body["message"]
        self.last_seen = now

    @property
    def body(self) -> dict:
        """The first occurrence's body."""
        return cast(dict, orjson.loads(self.raw))

    @property
    def unsent(self) -> bool:
        """Occurrences the server has not been told about."""
        return self.count != self.sent_count

    def create_body(self) -> dict:
        return {**self.body, "count": self.count, "lastTimestamp": self.last_timestamp, "message": self.message}

    def patch(self) -> dict:
        """What a repeat changes (client-go patches the same three fields)."""
        return {"count": self.count, "lastTimestamp": self.last_timestamp, "message": self.message}


@dataclass(slots=True)
class _Aggregate:
    messages: set[bytes] = field(default_factory=set)  # digests of the distinct messages seen
    last_seen: float = 0.0


class Correlator:
    """client-go's EventCorrelator: aggregation and series counting (:meth:`observe`), and the spam filter
    (:meth:`allow`). Not thread-safe (the recorder calls it under its lock); ``now`` is a monotonic clock in
    seconds."""

    def __init__(self, *, window: float = WINDOW_SECONDS, max_messages: int = AGGREGATE_MAX_EVENTS,
                 burst: int = SPAM_BURST, refill: float = SPAM_REFILL_PER_SECOND, cache_size: int = CACHE_SIZE) -> None:
        self.window = window
        self.max_messages = max_messages
        self.burst = burst
        self.refill = refill
        self._series: LRU[bytes, Series] = LRU(cache_size)
        self._aggregates: LRU[bytes, _Aggregate] = LRU(cache_size)
        self._buckets: LRU[bytes, TokenBucket] = LRU(cache_size)

    def observe(self, body: dict, now: float) -> Series:
        """Count one occurrence; returns the series (the Event on the server) it belongs to."""
        self._prune(now)
        body, key = self._aggregate(body, now)
        series = self._series.get(key)
        if series is None or now - series.last_seen > self.window:
            series = Series.start(body, now)
            self._series.put(key, series)
        else:
            series.repeat(body, now)
        return series

    def allow(self, series: Series, now: float) -> bool:
        """The spam filter: may a request about this series' object be made now? Asked only when a request would
        be made (an occurrence folded into a queued send costs no request, so it takes no token)."""
        key = series.spam_key
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(float(self.burst), self.refill, float(self.burst), now)
            self._buckets.put(key, bucket)
        return bucket.take(now)

    def _prune(self, now: float) -> None:
        """Series and aggregates quiet for longer than the window start afresh anyway; a bucket untouched for as
        long as a full refill takes is as good as a new one."""
        horizon = now - self.window
        self._series.prune(lambda series: series.last_seen < horizon)
        self._aggregates.prune(lambda record: record.last_seen < horizon)
        refill_time = self.burst / self.refill if self.refill > 0 else float("inf")
        self._buckets.prune(lambda bucket: now - bucket.stamp > refill_time)

    def _aggregate(self, body: dict, now: float) -> tuple[dict, bytes]:
        """The body and series key this occurrence counts under: its own, or the combined Event of its reason."""
        key = aggregate_key(body)
        record = self._aggregates.get(key)
        if record is None or now - record.last_seen > self.window:
            record = _Aggregate()
            self._aggregates.put(key, record)
        record.last_seen = now
        message = _digest(body["message"])
        record.messages.add(message)
        if len(record.messages) < self.max_messages:
            return body, event_key(body)
        record.messages.discard(message)  # keep the set bounded, as client-go does
        involved_name = (body.get("involvedObject") or {}).get("name")
        combined = {**body, "metadata": {**body["metadata"], "name": _fresh_name(involved_name)},
                    "message": (COMBINED_PREFIX + body["message"])[:MESSAGE_LIMIT]}
        return combined, key

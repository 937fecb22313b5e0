"""Own writes: the watch event of a write a reconcile of key K made to K's own objects does not run K again.

Without this, every run that writes (a finalizer, an init patch, a status PUT, a managed resource it patched) is
followed by one more, mostly no-op run of the same key: the watcher sees the write, the gate marks the key
"pending while running", and DONE re-publishes it.

A write is identified by ``"<uid>/<resourceVersion>"``: every change the API server makes gets a new
resourceVersion, so a write by anyone else never has the same id. Only *conditional* writes are recorded (a
precondition on the resourceVersion the run read, or a create): the state they produce is exactly "what the run
read, plus its own change" (for a create: what the create returned), so the run has already acted on it. That
holds for a write of the object's *spec* too: the run writes the status for the spec it wrote, its conditions
stamped with the generation that write produced (:func:`poolboy.domain.conditions.observe`), so ``kubectl wait``
never waits for a run that the dropped event would have caused. An unconditional write that changed nothing would
return the version of somebody else's write, whose event must not be dropped.

Three Redis keys per work key K, all hash-tagged ``{K}`` like the gate's own keys:

* ``selfwrites:{K}`` — SET of write ids recorded by finished runs of K (short TTL: an event comes within seconds).
* ``selfwrites:{K}:deferred`` — SET of ids of MODIFIED events that arrived while a run of K was going. The
  watch event of a write usually arrives *before* the run ends (often before the next line of the reconciler
  runs), so the watcher cannot decide then; the run decides at its end, when it knows all its writes.
* ``selfwrites:{K}:closing`` — the gate token of the run that has settled (between its settle and gate DONE).

The watcher's :meth:`OwnWrites.check` and the run's :meth:`OwnWrites.settle` are each one atomic script, so an
event is always decided by exactly one of them:

* id in ``selfwrites:{K}`` -> skip (a settled run wrote it);
* else a run holds the key's gate lease and has not settled -> deferred to that run's settle;
* else -> the watcher adds the key to the gate as usual (after a settle but before DONE this is "pending while
  running", so DONE re-publishes: no change is ever lost in that window).

``settle`` records the run's writes, then takes every deferred id that is not one of the key's own writes as a
change by someone else, and the worker adds the key to the gate for it (still inside the run: pending while
running, re-published by DONE). A run that dies before settling leaves its deferred ids behind; the gate's lease
reaper re-runs the key and that run's settle re-examines them (at worst one extra run). Redis is an accelerator:
if the watcher cannot check, it adds the key; if a run cannot settle, it adds its own key.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import redis
from prometheus_client import Counter

from poolboy.observability import Write, on_write
from workers.gate import active_key

log = logging.getLogger(__name__)

#: how long a finished run's write ids are remembered: the watch event of a write normally arrives in milliseconds
RECORD_TTL_MS = 60_000
#: a safety bound for ids deferred to a run that died without settling (the reaper re-runs the key long before)
DEFERRED_TTL_S = 86_400
#: how long the "settled" marker lives; it only matters between settle and DONE, a few milliseconds
CLOSING_TTL_MS = 60_000

SKIP, DEFERRED, ADD = "skip", "deferred", "add"

DEFERRED_EVENTS = Counter("poolboy_deferred_watch_events_total",
                          "Watch events that arrived during a run of their key, as that run judged them: its own "
                          "write (dropped) or someone else's change (the key runs again)", ["outcome"])

# check: KEYS selfwrites, deferred, closing, gate active; ARGV id, deferred_ttl_s -> 0 skip | 1 deferred | 2 add
_CHECK = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  return 0
end
local holder = redis.call('GET', KEYS[4])
if holder and holder ~= redis.call('GET', KEYS[3]) then
  redis.call('SADD', KEYS[2], ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 2
"""

# settle: KEYS selfwrites, deferred, closing; ARGV token, record_ttl_ms, closing_ttl_ms, ids...
# -> {number of deferred ids, the deferred ids that are not the key's own writes...}
_SETTLE = """
if #ARGV > 3 then
  redis.call('SADD', KEYS[1], unpack(ARGV, 4))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local deferred = redis.call('SMEMBERS', KEYS[2])
local foreign = {#deferred}
for _, id in ipairs(deferred) do
  if redis.call('SISMEMBER', KEYS[1], id) == 0 then
    table.insert(foreign, id)
  end
end
if #deferred > 0 then
  redis.call('DEL', KEYS[2])
end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[3])
return foreign
"""


def records_key(key: str) -> str:
    return f"selfwrites:{{{key}}}"


def deferred_key(key: str) -> str:
    return f"selfwrites:{{{key}}}:deferred"


def closing_key(key: str) -> str:
    return f"selfwrites:{{{key}}}:closing"


def write_id(uid: str, resource_version: str) -> str:
    return f"{uid}/{resource_version}"


class OwnWrites:
    """The two atomic steps, against one Redis client (thread-safe, like the client)."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._check = client.register_script(_CHECK)
        self._settle = client.register_script(_SETTLE)

    def check(self, key: str, ident: str) -> str:
        """Watcher side: :data:`SKIP`, :data:`DEFERRED` (the running run decides) or :data:`ADD`. Raises on a
        Redis error: the caller must then add the key."""
        reply = int(self._check(keys=[records_key(key), deferred_key(key), closing_key(key), active_key(key)],
                                args=[ident, DEFERRED_TTL_S]))
        return (SKIP, DEFERRED, ADD)[reply]

    def settle(self, key: str, token: str, idents: list[str]) -> Settled:
        """Worker side, after the reconcile and before gate DONE: record ``idents`` and sort the deferred events
        (the caller adds the key to the gate when any of them is someone else's change)."""
        reply = self._settle(keys=[records_key(key), deferred_key(key), closing_key(key)],
                             args=[token, RECORD_TTL_MS, CLOSING_TTL_MS, *idents])
        foreign = [x.decode() if isinstance(x, bytes) else str(x) for x in reply[1:]]
        return Settled(deferred=int(reply[0]), foreign=foreign)


@dataclass(frozen=True)
class Settled:
    """What a run's settle found: how many events were deferred to it, and which of them were not its own."""

    deferred: int
    foreign: list[str]

    @property
    def own(self) -> int:
        return self.deferred - len(self.foreign)


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
            self.idents.append(write_id(write.uid, write.resource_version))


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

"""Which objects a periodic sweep must run: the ones that changed since they were last reconciled.

A periodic run of every object costs CPU in proportion to the cluster even when nothing changed (controller-runtime
resyncs every ten hours and relies on its watches). What the claim and handle sweeps are still for, and who else
covers it:

* a change the run did not see: every watch event (spec, metadata or status, of the object or of a managed
  resource, a provider's validity) already adds its key; the sweep adds an object whose cached version moved past
  the version its last successful run recorded (its ``clean`` mark, :class:`CleanMarks`), in case an add was lost;
* a run owed but never started (a worker killed holding its message): the object's pending mark is still there,
  and the sweep adds it (the queue re-publishes a queued mark older than ``gate_stale_seconds``); a failed run's
  retry is in the delaying queue, and the object has no clean mark until a run succeeds;
* time: lifespan starts and ends, unclaimed handles and re-checks of permanent errors are in the due-index; an
  object whose provider's templates read the clock (``now()``, ``timestamp``, ``datetime``) re-runs itself every
  ``time_dependent_interval`` through the due-index (:attr:`poolboy.domain.provider_spec.ProviderSpec.reads_clock`).

So an object whose cached version equals its clean mark and which owes no run is passed over: a sweep of 1 500
converged objects costs two pipelined Redis round trips instead of 1 500 reconciles. The full resync
(``resync_interval``) still runs everything, from the API.
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

from cache import model as cache_model
from cache.store import object_key
from poolboy import keys
from poolboy.settings import Settings
from workqueue import keyspace
from workqueue.roundtrip import Call

#: the kinds whose sweeps skip clean objects (pools are few, and their sweep is the replenishment safety net)
FILTERED = frozenset({keys.CLAIM, keys.HANDLE})
#: objects checked per pipelined round trip
CHUNK = 500


def cached_object_key(settings: Settings, key: str) -> str:
    """The shared cache's hash of the object behind a work key."""
    kind, namespace, name = keys.parse(key)
    return object_key(cache_model.object_id(settings.api_version, keys.KINDS[kind], namespace, name))


def dirty_keys(client: redis.Redis, settings: Settings, candidates: Iterable[str]) -> list[str]:
    """The work keys among ``candidates`` that a sweep must add: changed since their last successful run (or never
    run), or owing a run."""
    candidates = list(candidates)
    dirty: list[str] = []
    for start in range(0, len(candidates), CHUNK):
        chunk = candidates[start:start + CHUNK]
        pipe = client.pipeline(transaction=False)
        for key in chunk:
            pipe.hmget(cached_object_key(settings, key), "rv", "clean")
            pipe.exists(keyspace.pending(key))
        replies = pipe.execute()
        for index, key in enumerate(chunk):
            (version, clean), pending = replies[2 * index], replies[2 * index + 1]
            if pending or version is None or version != clean:
                dirty.append(key)
    return dirty


# KEYS cached object, the key's lease; ARGV the run's lease token. The version the cache holds at the run's end is
# the one recorded, by a run that still holds the key (one that lost it may overlap a run that sees more).
_MARK_CLEAN = """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return false
end
local rv = redis.call('HGET', KEYS[1], 'rv')
if rv then
  redis.call('HSET', KEYS[1], 'clean', rv)
end
return rv
"""


class CleanMarks:
    """A successful run's record that the object is reconciled at the version the cache holds."""

    def __init__(self, client: redis.Redis, settings: Settings) -> None:
        self.settings = settings
        self._mark = client.register_script(_MARK_CLEAN)

    def mark_call(self, key: str, token: str) -> Call[object]:
        """Before the run releases the key (DONE), while ``token`` still holds it."""
        return Call(self._mark, [cached_object_key(self.settings, key), keyspace.active(key)], [token])

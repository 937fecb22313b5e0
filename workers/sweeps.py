"""Which objects a periodic sweep must run: the ones that changed since they were last reconciled.

A periodic run of every object costs CPU in proportion to the cluster even when nothing changed (controller-runtime
resyncs every ten hours and relies on its watches). What the claim and handle sweeps are still for, and who else
covers it:

* a change the run did not see: every watch event (spec, metadata or status, of the object or of a managed
  resource, a provider's validity) already adds its key; the sweep adds an object whose cached version moved past
  the version its last successful run recorded (DONE's ``clean`` mark), in case an add was lost;
* a run owed but never started (a worker killed holding its message): the object's pending mark is still there,
  and the sweep adds it (the gate re-publishes a queued mark older than ``gate_stale_seconds``); a transient
  failure's retry is a countdown message the gate does not record, so that run drops the object's clean mark
  instead, and the sweep adds it until a run succeeds;
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
from workers.gate import pending_key

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
            pipe.exists(pending_key(key))
        replies = pipe.execute()
        for index, key in enumerate(chunk):
            (version, clean), pending = replies[2 * index], replies[2 * index + 1]
            if pending or version is None or version != clean:
                dirty.append(key)
    return dirty

"""Which objects a periodic sweep or the resync must run: the ones that changed since they were last reconciled,
owe a run, or have not run for a sync period.

A periodic run of every object costs CPU in proportion to the cluster even when nothing changed (controller-runtime
resyncs every ten hours and relies on its watches). What the claim, handle and pool sweeps and the resync are still for,
and who else covers it:

* a change the run did not see: every watch event (spec, metadata or status, of the object or of a managed
  resource, a provider's validity) already adds its key; a sweep adds an object whose version moved past the
  version its last successful run recorded (its ``clean`` mark, :class:`CleanMarks`), in case an add was lost. The
  60 s sweeps read the version from the shared cache, the resync from the API, so a cache that missed an event is
  caught too;
* a run owed but never started (a worker killed holding its message, or one that promised to wake the object and
  died holding its events): the object's pending mark or held events are still there,
  and the sweep adds it (the queue re-publishes a queued mark older than ``workqueue_stale_seconds``); a failed run's
  retry is in the delaying queue, and the object has no clean mark until a run succeeds or is refused (a permanent
  error's slow re-check is in the delaying queue too, so the sweeps do not try it again meanwhile);
* time: lifespan starts and ends, unclaimed handles and re-checks of permanent errors are in the delaying queue; an
  object whose provider's templates read the clock (``now()``, ``timestamp``, ``datetime``) re-runs itself every
  ``time_dependent_interval`` through the delaying queue
(:attr:`poolboy.domain.provider_spec.ProviderSpec.reads_clock`); * anything else (a lost event of something the object
  depends on): every object runs again once its last successful run is older than ``sync_period`` (controller-runtime's
  SyncPeriod, ten hours), jittered so that the objects of a burst do not all come due in the same minute;
* a Redis loss takes the clean marks with it, so the next resync runs everything and rebuilds queue and delaying queue.

So an object whose version equals its clean mark and which owes no run is passed over: a sweep of 20 000 converged
objects costs a few pipelined Redis round trips instead of 20 000 reconciles.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

import redis

from cache import model as cache_model
from poolboy import keys, kinds
from poolboy.settings import Settings
from redisscripts import Call, Script
from workqueue import keyspace
from workqueue.clock import SYSTEM_CLOCK, Clock

#: the kinds whose sweeps skip clean objects (:attr:`poolboy.kinds.Kind.skip_converged`)
FILTERED = frozenset(kind.token for kind in kinds.DECLARED if kind.skip_converged)
#: objects checked per pipelined round trip
CHUNK = 500
#: the share of the sync period by which an object's refresh comes early at most
JITTER = 0.1


def cached_object_key(settings: Settings, key: str) -> str:
    """The shared cache's hash of the object behind a work key."""
    kind, namespace, name = keys.parse(key)
    return keyspace.cached_object(cache_model.object_id(settings.api_version, keys.KINDS[kind], namespace, name))


def dirty_keys(client: redis.Redis, settings: Settings, candidates: Iterable[str],
               versions: Mapping[str, str] | None = None, now: float | None = None) -> list[str]:
    """The work keys among ``candidates`` that must run: changed since their last successful run (or never run),
    owing a run, or due for their refresh by ``now`` (default: the host's clock). The version an object is at is
    ``versions[key]`` when given (what the API listed), else the shared cache's."""
    candidates = list(candidates)
    now = SYSTEM_CLOCK.now() if now is None else now
    dirty: list[str] = []
    for start in range(0, len(candidates), CHUNK):
        chunk = candidates[start:start + CHUNK]
        pipe = client.pipeline(transaction=False)
        for key in chunk:
            pipe.hmget(cached_object_key(settings, key), "rv", "clean", "refresh")
            pipe.exists(keyspace.pending(key), keyspace.held_events(key))
        replies = pipe.execute()
        for index, key in enumerate(chunk):
            (cached, clean, refresh), pending = replies[2 * index], replies[2 * index + 1]
            version = cached if versions is None else versions[key].encode()
            if pending or version is None or version != clean or refresh is None or float(refresh) <= now:
                dirty.append(key)
    return dirty


#: ``object`` the cached object, ``active`` the key's lease, ``token`` the run's, ``refresh`` when the object is next
#: due for its refresh (epoch seconds)
MARK_CLEAN = Script("engine/mark_clean", keys=("object", "active"), args=("token", "refresh"))


class CleanMarks:
    """A successful run's record that the object is reconciled at the version the cache holds, and when it is due
    to run again all the same (``sync_period``, up to :data:`JITTER` of it early)."""

    def __init__(self, client: redis.Redis, settings: Settings, clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings
        self.clock = clock
        self._mark = MARK_CLEAN.register(client)

    def mark_call(self, key: str, token: str) -> Call[object]:
        """Before the run releases the key (DONE), while ``token`` still holds it."""
        period = self.settings.sync_period
        refresh = self.clock.now() + period * (1.0 - JITTER * random.random())
        return self._mark.call(object=cached_object_key(self.settings, key), active=keyspace.active(key), token=token,
                               refresh=repr(refresh))

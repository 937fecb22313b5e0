"""The active watcher's side of the shared read cache (:mod:`cache.store`), and its Redis-loss detector.

Here rather than in ``watcher/`` so that the cache's writer and its readers live in one package.

* Every (re)list fills the cache with what the API returned and prunes what it no longer has, *before* the listed
  keys reach the work queue, so the runs they cause read at least the listed versions; the scope is then ``synced``.
* Every watch event writes the cache before its key reaches the work queue (ADDED/MODIFIED: the object, DELETED: a
  tombstone), for the same reason.
* A heartbeat thread keeps the ``alive`` key while this watcher leads, and checks every second that Redis still
  holds this watcher's epoch key. If not, Redis lost its data (restarted without persistence, FLUSHALL, failover to
  an empty replica): the work queue, the delaying queue and the cache are gone, so every informer lists again at once,
  which refills the cache and hands every key to the work queue again, without waiting for the periodic resync. The same
  happens when Redis answers again after an outage, whatever it kept: work queued or run meanwhile may be lost.
* When Redis refuses a cache write for memory (``maxmemory`` reached, :mod:`engine.redis_oom`), the cache misses
  what it refused, so the watcher retires it at once (deletes still work then): readers go to the API. It tries its
  heartbeat again only after a quiet period that doubles with each refusal in a row (5 s up to 5 minutes), and the
  first heartbeat Redis accepts lists everything once, which refills the cache and re-adds the work the refusals
  lost. So a Redis at its limit costs one re-list per quiet period at most, never a re-list loop.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Protocol

import redis
from prometheus_client import Counter

from cache import model as cache_model
from cache.store import ObjectCache, ScriptCall
from engine import redis_oom
from engine.registries import WATCHER
from poolboy.observability import labelled
from poolboy.utils.backoff import doubling
from workqueue import keyspace

log = logging.getLogger(__name__)

EPOCH = keyspace.EPOCH

CACHE_WRITES = Counter("poolboy_cache_writes_total", "Writes of the watcher into the shared cache", ["op"],
                       registry=WATCHER)
CACHE_ERRORS = Counter("poolboy_cache_write_errors_total", "Failed writes of the watcher into the shared cache",
                       registry=WATCHER)
REDIS_LOSSES = Counter("poolboy_redis_state_lost_total",
                       "Times the watcher re-listed everything because Redis lost its epoch key (restarted empty or "
                       "flushed) or answered again after an outage", registry=WATCHER)
#: the quiet period after a refusal for memory: doubling from the first to the last, per refusal in a row
OOM_QUIET_S = (5.0, 300.0)


class Listed(Protocol):
    """What :meth:`CacheWriter.on_list` needs of the informer that listed (``watcher.informer.Informer``): the
    collection it covers, so the cache can prune what the list no longer has."""

    api_version: str
    kind: str
    namespace: str | None
    label_selector: str | None

    @property
    def name(self) -> str: ...


class CacheWriter:
    def __init__(self, client: redis.Redis, domain: str, *, alive_seconds: float = 15.0,
                 on_redis_lost: Callable[[], None] | None = None, check_interval: float = 1.0) -> None:
        self.cache = ObjectCache(client, domain)
        self.redis = client
        self.alive_seconds = alive_seconds
        self.check_interval = check_interval
        self.on_redis_lost = on_redis_lost
        self.epoch = uuid.uuid4().hex
        #: the last heartbeat failed: Redis is away (the next successful one re-lists everything)
        self.unreachable = False
        #: refusals for memory in a row, and the monotonic time before which no heartbeat is tried after the last
        self._refusals = 0
        self._quiet_until = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- informer callbacks ----------------------------------------------------------------------------------

    def on_list(self, informer: Listed, items: list[dict]) -> None:
        try:
            self.cache.put_many(items)
            listed = {cache_model.identity(obj) for obj in items}
            removed = self.cache.prune(informer.api_version, informer.kind, informer.namespace, listed,
                                       cache_model.parse_selector(informer.label_selector))
            self.cache.mark_synced(informer.api_version, informer.kind, informer.namespace)
            CACHE_WRITES.labels("list").inc(len(items))
            CACHE_WRITES.labels("prune").inc(removed)
        except Exception as error:  # the cache only costs speed: the keys still go to the work queue
            CACHE_ERRORS.inc()
            if self._refused_for_memory(error, f"{informer.name}: the cache is not filled from the list"):
                return
            log.warning("%s: could not fill the cache from the list: %s", informer.name, error)

    def event_call(self, event_type: str, obj: dict) -> ScriptCall | None:
        """What a watch event writes, as (script, keys, args) for the watcher's intake to pipeline with the keys the
        event wakes (:class:`engine.enqueue.EventIntake`; None: nothing, a LISTED object was written by
        :meth:`on_list`)."""
        if event_type == "LISTED":
            return None
        return self.cache.delete_call(obj) if event_type == "DELETED" else self.cache.put_call(obj)

    def event_written(self, event_type: str, obj: dict, error: BaseException | None = None) -> None:
        """Count an event's cache write (:meth:`event_call`) and log its failure: the cache only costs speed."""
        if error is None:
            labelled(CACHE_WRITES, event_type.lower()).inc()
            return
        CACHE_ERRORS.inc()
        if self._refused_for_memory(error, f"{event_type} of {cache_model.identity(obj)} is not cached"):
            return
        log.warning("could not write %s of %s to the cache: %s", event_type, cache_model.identity(obj), error)

    def _refused_for_memory(self, error: BaseException, what: str) -> bool:
        """When ``error`` is Redis refusing a write for memory: report it, retire the cache (it now misses what was
        refused) and hold the heartbeat back for a quiet period; the first heartbeat after it lists everything."""
        if not redis_oom.is_oom(error):
            return False
        redis_oom.report(log, f"{what}; the shared cache is off until Redis accepts writes, then everything is "
                              "listed again", error)
        now = time.monotonic()
        if now >= self._quiet_until:  # one step of the quiet period per refusal in a row, not per refused write
            self._refusals += 1
            self._quiet_until = now + doubling(self._refusals, base=OOM_QUIET_S[0], cap=OOM_QUIET_S[1])
        self.unreachable = True
        try:
            self.cache.retire()  # deletes are allowed at maxmemory: readers stop trusting the cache at once
        except redis.RedisError as retire_error:
            log.debug("cache retire: %s", retire_error)
        return True

    # --- leadership ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """This watcher leads: lists are answered only after its informers listed; heartbeat and epoch from now."""
        self._stop.clear()
        try:
            self.cache.reset()
            self.redis.set(EPOCH, self.epoch)
            self.cache.heartbeat(self.alive_seconds)
        except Exception as error:
            log.warning("cache start: %s", error)
        self._thread = threading.Thread(target=self._loop, name="cache heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        try:
            self.cache.retire()
        except Exception as error:
            log.debug("cache retire: %s", error)

    def _loop(self) -> None:
        while not self._stop.wait(self.check_interval):
            if time.monotonic() < self._quiet_until:
                continue  # Redis refused a write for memory: the cache stays retired for the quiet period
            try:
                self.check(after_outage=self.unreachable)
                self.unreachable = False
                self._refusals = 0 if time.monotonic() > self._quiet_until + OOM_QUIET_S[1] else self._refusals
            except Exception as error:  # Redis away: readers already fall back to the API
                if self._refused_for_memory(error, "the watcher's heartbeat is refused"):
                    continue
                if not self.unreachable:
                    log.warning("Redis unreachable (%s); re-listing everything once it answers again", error)
                self.unreachable = True

    def check(self, *, after_outage: bool = False) -> bool:
        """Renew the heartbeat; True (and a re-list of everything) when Redis lost this watcher's epoch, or answers
        again after an outage (a restart *with* persistence keeps the epoch but may have lost queued messages and
        work queue marks written since its last save, and events were not delivered while it was away)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.get(EPOCH)
        pipe.set(EPOCH, self.epoch)
        epoch, _ = pipe.execute()
        lost = after_outage or epoch is None or epoch.decode() != self.epoch
        if lost:
            REDIS_LOSSES.inc()
            cause = "it answers again after an outage" if after_outage else \
                "its epoch key is " + ("gone" if epoch is None else "replaced")
            log.warning("Redis may have lost state (%s); re-listing everything", cause)
            self.cache.reset()
            if self.on_redis_lost is not None:
                self.on_redis_lost()
        self.cache.heartbeat(self.alive_seconds)
        return lost

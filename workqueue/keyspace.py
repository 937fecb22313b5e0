"""Every Redis key the operator writes, under one prefix, so that ``redis-cli --scan --pattern 'poolboy:*'`` shows
all of its state and nothing else's; one section per package that writes them.

Per-key state is hash-tagged with the work key (``{claim/ns/name}``), so one key's queue marks, own-write records
and failure count share a Redis Cluster slot and one script may touch them together. The shared read cache's keys
are not (its scripts touch keys they compute at run time: not for Redis Cluster).

A key's name is its contract with a running Redis: a name changed here orphans what Redis holds under the old one.
"""

from __future__ import annotations

from collections.abc import Callable

PREFIX = "poolboy:"


def tagged(key: str) -> str:
    """The work key as a Redis Cluster hash tag."""
    return "{" + key + "}"


def layout(per_key: Callable[[str], str]) -> str:
    """A per-key layout (:func:`pending`, :func:`active`) as a Lua ``string.format`` pattern of the work key, for a
    script that finds work keys at run time (the lease reaper)."""
    return per_key("%s")


# --- the work queue (workqueue/) ----------------------------------------------------------------------------------

#: per key a pending mark and a lease (:mod:`workqueue.queue`), and the ZSET of lease deadlines
QUEUE = PREFIX + "queue:"
LEASES = QUEUE + "leases"
#: the delaying queue (:mod:`workqueue.delaying`): key -> when it is to be added
DUE = QUEUE + "due"


def pending(key: str) -> str:
    """"A run is owed": the queue's mark (:mod:`workqueue.queue`)."""
    return f"{QUEUE}{tagged(key)}:pending"


def active(key: str) -> str:
    """"A run is going on": the lease of the run holding the key."""
    return f"{QUEUE}{tagged(key)}:active"


def failures(key: str) -> str:
    """The key's consecutive failures (:mod:`workqueue.ratelimit`)."""
    return f"{QUEUE}{tagged(key)}:failures"


# --- the reconcile engine (engine/) -------------------------------------------------------------------------------

OWN_WRITES = PREFIX + "ownwrites:"
RUN_LOG = PREFIX + "runlog:"


def own_writes(key: str) -> str:
    """The write ids finished runs of the key made (:mod:`engine.own_writes`)."""
    return f"{OWN_WRITES}{tagged(key)}"


def deferred_events(key: str) -> str:
    """The write ids of watch events deferred to the run of the key going on (:mod:`engine.own_writes`)."""
    return f"{OWN_WRITES}{tagged(key)}:deferred"


def promised(key: str) -> str:
    """The lease token of a run that promised to wake the key at its end (:mod:`engine.own_writes`)."""
    return f"{OWN_WRITES}{tagged(key)}:promised"


def held_events(key: str) -> str:
    """The write ids of the key's watch events held for the run that promised to wake it (:mod:`engine.own_writes`)."""
    return f"{OWN_WRITES}{tagged(key)}:held"


def logged_error(key: str) -> str:
    """The permanent error last logged for the key (:mod:`engine.run_log`)."""
    return f"{RUN_LOG}{tagged(key)}:logged"


# --- the shared read cache (cache/) -------------------------------------------------------------------------------

#: :mod:`cache.store`
CACHE = PREFIX + "cache:"
#: the active watcher's heartbeat: readers trust the cache only while it exists
CACHE_ALIVE = CACHE + "alive"
#: a SET of the collections the watcher has listed since it took over (:func:`cache.store.scope`)
CACHE_SYNCED = CACHE + "synced"
#: per object a HASH (:mod:`cache.store`), per index a SET, HASH or ZSET of object ids (:func:`cache.model.indexes`)
CACHE_OBJECTS = CACHE + "o:"
CACHE_INDEXES = CACHE + "i:"
#: the watcher's epoch, by which it finds Redis emptied (:mod:`cache.writer`)
EPOCH = PREFIX + "epoch"


def cached_object(ident: str) -> str:
    """The HASH of the object of id ``ident`` (:func:`cache.model.object_id`)."""
    return CACHE_OBJECTS + ident


def cache_index(index: str) -> str:
    return CACHE_INDEXES + index


#: a handle reserved for a claim, by handle id (:mod:`cache.handle_index`)
RESERVATIONS = CACHE + "resv:"


def reservation(handle_id: str) -> str:
    return RESERVATIONS + handle_id


def namespace_reservations(binding_scope: str, namespace: str) -> str:
    """The handles a namespace's claims reserved in a scope under a cap (by expiry), until the index shows them
    bound."""
    return f"{RESERVATIONS}ns:{binding_scope}|{namespace}"


# --- celery beat (workers/) ---------------------------------------------------------------------------------------

#: celery-redbeat's schedule and lock (:mod:`workers.beat_scheduler`)
BEAT = PREFIX + "beat:"

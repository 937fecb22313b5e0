"""Every Redis key the operator writes, under one prefix, so that ``redis-cli --scan --pattern 'poolboy:*'`` shows
all of its state and nothing else's.

Per-key state is hash-tagged with the work key (``{claim/ns/name}``), so one key's queue marks, own-write records
and failure count share a Redis Cluster slot and one script may touch them together.
"""

from __future__ import annotations

PREFIX = "poolboy:"

#: the work queue (:mod:`workqueue.queue`): per key a pending mark and a lease, and the ZSET of lease deadlines
QUEUE = PREFIX + "queue:"
LEASES = QUEUE + "leases"
#: the delaying queue (:mod:`workqueue.delaying`): key -> when it is to be added
DUE = QUEUE + "due"
#: the shared read cache (:mod:`cache.store`) and its epoch (:mod:`cache.writer`)
CACHE = PREFIX + "cache:"
EPOCH = PREFIX + "epoch"
#: celery-redbeat's schedule and lock (:mod:`workers.beat_scheduler`)
BEAT = PREFIX + "beat:"


def tagged(key: str) -> str:
    """The work key as a Redis Cluster hash tag."""
    return "{" + key + "}"


def pending(key: str) -> str:
    """"A run is owed": the queue's mark (:mod:`workqueue.queue`)."""
    return f"{QUEUE}{tagged(key)}:pending"


def active(key: str) -> str:
    """"A run is going on": the lease of the run holding the key."""
    return f"{QUEUE}{tagged(key)}:active"


def failures(key: str) -> str:
    """The key's consecutive failures (:mod:`workqueue.ratelimit`)."""
    return f"{QUEUE}{tagged(key)}:failures"


def own_writes(key: str) -> str:
    """The write ids finished runs of the key made (:mod:`engine.own_writes`)."""
    return f"{PREFIX}ownwrites:{tagged(key)}"


def deferred_events(key: str) -> str:
    """The write ids of watch events deferred to the run of the key going on (:mod:`engine.own_writes`)."""
    return f"{PREFIX}ownwrites:{tagged(key)}:deferred"


def logged_error(key: str) -> str:
    """The permanent error last logged for the key (:mod:`engine.run_log`)."""
    return f"{PREFIX}runlog:{tagged(key)}:logged"

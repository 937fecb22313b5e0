"""Redis memory of the shared read cache: ``used_memory`` and a census of the keys under the cache's prefix.

The watcher keeps every object it watches in Redis under one key prefix (``poolboy:cache:`` by default). The census
walks those keys with ``SCAN`` (never ``KEYS``, which blocks the server) and asks ``MEMORY USAGE`` of each, so the
cache's own bytes are known apart from the queues, the work queue and the delaying queue that share the same Redis. Keys
are grouped by the segment that follows the prefix (e.g. ``o`` for objects, ``i`` for indexes in ``o:<id>`` /
``i:<index>``), so a layout change shows up rather than being summed away.
"""

from __future__ import annotations

import collections
from typing import Any

import redis

from workqueue import keyspace

DEFAULT_PREFIX = keyspace.CACHE
#: the segment of one key per cached object (``<prefix>o:<id>``); without it every key counts as one object
OBJECT_SEGMENT = "o"
BATCH = 500


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def _segment(key: str, prefix: str) -> str:
    rest = key[len(prefix):]
    return rest.split(":", 1)[0] if ":" in rest else rest


def census(client: redis.Redis, prefix: str = DEFAULT_PREFIX) -> dict[str, Any]:
    """Keys and bytes (``MEMORY USAGE``, exact: ``SAMPLES 0``) under ``prefix``, in total and per segment."""
    keys: collections.Counter[str] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    batch: list[str] = []

    def flush() -> None:
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(batch, pipe.execute(), strict=True):
            segment = _segment(key, prefix)
            keys[segment] += 1
            sizes[segment] += size or 0  # None: the key expired between SCAN and MEMORY USAGE
        batch.clear()

    for raw in client.scan_iter(match=prefix + "*", count=1000):
        batch.append(raw.decode() if isinstance(raw, bytes) else raw)
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    objects = keys.get(OBJECT_SEGMENT, 0) if OBJECT_SEGMENT in keys else sum(keys.values())
    return {"prefix": prefix, "keys": sum(keys.values()), "bytes": sum(sizes.values()), "objects": objects,
            "by_segment": {name: {"keys": keys[name], "bytes": sizes[name]} for name in sorted(keys)}}


def per_10k(before: dict[str, Any], after: dict[str, Any], used_before: int, used_after: int) -> dict[str, Any]:
    """The cache's cost per 10 000 cached objects: by its own keys' bytes, and by Redis ``used_memory`` (which
    also carries whatever else the workload left in Redis: work queue keys, delaying queue, queues)."""
    objects = after["objects"] - before["objects"]
    cache_bytes = after["bytes"] - before["bytes"]
    used = used_after - used_before

    def scale(value: int) -> float:
        return round(value / objects * 10_000 / 2**20, 2) if objects > 0 else 0

    return {"objects_added": objects, "cache_bytes_added": cache_bytes, "used_memory_delta": used,
            "cache_mib_per_10k_objects": scale(cache_bytes), "used_memory_mib_per_10k_objects": scale(used),
            "bytes_per_object": round(cache_bytes / objects) if objects > 0 else 0}

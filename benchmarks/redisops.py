"""Redis commands per claim, by command: the delta of ``INFO commandstats`` between two moments.

Redis counts every command it ran since start (``cmdstat_<name>: calls=…``), so two snapshots give what the
stack asked for in between, whoever asked: the watcher's work queue ADDs, workers' START/DONE/RENEW scripts, Celery's
publishes, BRPOPs and acks, beat's sweeps. The benchmark's own ``INFO`` calls are left out.
"""

from __future__ import annotations

import collections

import redis

OWN = ("info",)


def snapshot(client: redis.Redis) -> collections.Counter[str]:
    stats = client.info("commandstats")
    return collections.Counter({name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()
                                if name.removeprefix("cmdstat_") not in OWN})


def per_claim(before: collections.Counter[str], after: collections.Counter[str], n: int) -> dict[str, float]:
    """Commands per claim, ``total`` first, then by command, largest first."""
    delta = after - before  # Counter subtraction keeps positive counts only
    return {"total": round(sum(delta.values()) / n, 2),
            **{name: round(count / n, 2) for name, count in delta.most_common()}}

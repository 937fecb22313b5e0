"""The operator's API requests by verb and resource: devcluster's counters minus the benchmark's own requests.

devcluster counts every request by ``(verb, resource label, namespace)`` (``devcluster.counters``). The benchmark
creates claims and list-watches claims and handles through the same server, so it counts its own requests here, by
verb and plural, and they are subtracted: what is left is what the watcher, workers and beat asked for. Resources
are named by their plural alone (``get resourceproviders``, ``create events``), which is how a capacity model reads
them.
"""

from __future__ import annotations

import collections
import threading

Key = tuple[str, str]  # (verb, plural)


def plural_of(label: str) -> str:
    """``resourceclaims.poolboy.gpte.redhat.com`` -> ``resourceclaims``; ``events`` stays ``events``."""
    return label.split(".", 1)[0]


class OwnRequests:
    """The benchmark's own requests by (verb, plural), counted from any of its threads (parallel creators,
    watch threads)."""

    def __init__(self) -> None:
        self._counts: collections.Counter[Key] = collections.Counter()
        self._lock = threading.Lock()

    def add(self, verb: str, plural: str) -> None:
        with self._lock:
            self._counts[(verb, plural)] += 1

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()

    def by_key(self) -> collections.Counter[Key]:
        with self._lock:
            return collections.Counter(self._counts)

    def by_verb(self) -> collections.Counter[str]:
        result: collections.Counter[str] = collections.Counter()
        for (verb, _), count in self.by_key().items():
            result[verb] += count
        return result


def operator_by_verb_resource(items: list[dict], own: collections.Counter[Key]) -> collections.Counter[str]:
    """``"verb plural" -> count`` from devcluster's ``items`` (all namespaces summed) minus ``own``."""
    merged: collections.Counter[Key] = collections.Counter()
    for item in items:
        merged[(item["verb"], plural_of(item["resource"]))] += item["count"]
    merged.subtract(own)
    return collections.Counter({f"{verb} {plural}": count for (verb, plural), count in merged.items() if count > 0})


def per_claim(counts: collections.Counter[str], n: int) -> dict[str, float]:
    """Per claim, largest first, with ``total`` first."""
    return {"total": round(sum(counts.values()) / n, 2),
            **{key: round(count / n, 2) for key, count in counts.most_common()}}

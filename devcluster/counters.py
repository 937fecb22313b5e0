"""Request counters by verb × resource × namespace, so tests and benchmarks can assert how many API calls a
component made (e.g. "the watcher did not re-list"), by named object, so a test can tell that one object is not
reconciled in a hot loop (its request count stays flat), and requests for APIs devcluster does not serve (404s
for unknown groups, resources or subresources) by path, so an unmodified operator's vain calls are visible too."""

from __future__ import annotations

from collections import Counter
from typing import Any

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


class Counters:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.unserved: Counter[str] = Counter()
        self.objects: Counter[tuple[str, str, str]] = Counter()

    def add(self, verb: str, resource: str, namespace: str, name: str = "") -> None:
        self.counts[(verb, resource, namespace)] += 1
        if name:
            self.objects[(resource, namespace, name)] += 1

    def add_unserved(self, path: str) -> None:
        self.unserved[path] += 1

    def reset(self) -> None:
        self.counts.clear()
        self.unserved.clear()
        self.objects.clear()

    def to_json(self) -> dict[str, Any]:
        """``counts[verb][resource][namespace]`` (namespace ``""`` = cluster-wide), with totals per verb and
        per resource, and a flat ``items`` list for easy filtering; ``total`` counts served requests only, and
        ``unserved`` is ``{"total", "by_path": {path: n}}``; ``objects``: requests naming one object
        (``{"resource", "namespace", "name", "count"}``; subresources count for their object)."""
        nested: dict[str, dict[str, dict[str, int]]] = {}
        by_verb: Counter[str] = Counter({verb: 0 for verb in VERBS})
        by_resource: Counter[str] = Counter()
        items = []
        for (verb, resource, namespace), count in sorted(self.counts.items()):
            nested.setdefault(verb, {}).setdefault(resource, {})[namespace] = count
            by_verb[verb] += count
            by_resource[resource] += count
            items.append({"verb": verb, "resource": resource, "namespace": namespace, "count": count})
        return {"total": sum(self.counts.values()), "by_verb": dict(by_verb), "by_resource": dict(by_resource),
                "counts": nested, "items": items,
                "unserved": {"total": sum(self.unserved.values()), "by_path": dict(sorted(self.unserved.items()))},
                "objects": [{"resource": resource, "namespace": namespace, "name": name, "count": count}
                            for (resource, namespace, name), count in sorted(self.objects.items())]}

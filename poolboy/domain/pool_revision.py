"""The revision of a pool's handles: which pool and provider spec a handle was built from (rollover).

A pool handle is a snapshot: the pool's resources or provider and parameter values, its vars, and the providers'
specs as they were when the handle was made. The revision is a short hash of exactly those inputs, written on every
handle the pool creates (annotation ``D/resource-pool-revision``), so the pool can tell current handles from
outdated ones without re-rendering anything. Fields that do not change what a handle *is* (``minAvailable``,
``maxUnready``, ``lifespan``, ``preferenceScore``, the update strategy itself) are left out, so scaling a pool or
changing its strategy never rolls it. The hash is of canonical JSON (sorted keys), so it is the same in every
process and release, and ``blake2b`` because it is in the standard library and fast.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

ANNOTATION = "resource-pool-revision"


def revision(pool: Mapping[str, Any], provider_specs: Iterable[tuple[str, Mapping[str, Any]]]) -> str:
    """The revision of handles built now from ``pool`` and the ``(name, spec)`` of the providers it uses."""
    spec = pool.get("spec") or {}
    inputs = {
        "provider": spec.get("provider"),
        "resources": spec.get("resources"),
        "vars": spec.get("vars") or {},
        "providers": [[name, dict(provider_spec)]
                      for name, provider_spec in sorted(provider_specs, key=lambda item: item[0])],
    }
    return hashlib.blake2b(orjson.dumps(inputs, option=orjson.OPT_SORT_KEYS), digest_size=8).hexdigest()


def of_handle(handle: Mapping[str, Any], domain: str) -> str | None:
    """The revision a handle was built from; None for handles made before revisions (or not by a pool)."""
    return ((handle.get("metadata") or {}).get("annotations") or {}).get(f"{domain}/{ANNOTATION}")

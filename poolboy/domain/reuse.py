"""Reuse of released pool handles (docs/pools.md, "Reuse"; docs/behaviour.md#deletion), pure: which handles are
reused, the one write that releases a handle into cleaning, and the write that returns it to its pool fresh.

A handle a pool made (``spec.resourcePool``) whose provider has ``spec.reuse`` is released when its claim goes
instead of deleted. The release is ONE JSON patch on the handle, tested against the version read: it removes
``spec.resourceClaim``, the claim's labels and uid annotation, and adds the cleaning label
(``D/resource-handle-cleaning``) and the released annotation (when and from which claim). The label makes the
handle unbindable in the same write that unbinds it (:func:`poolboy.domain.binding.candidates.is_unbound`), so no
claim can bind it in between; ``status.state: Cleaning`` only mirrors it (status is a separate endpoint).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from poolboy.utils import timeutil

#: label (``D/resource-handle-cleaning``) of a released handle being cleaned: never bound, counted by its pool
CLEANING_LABEL: Final = "resource-handle-cleaning"
#: annotation (``D/resource-handle-released``): JSON ``{"since", "claim": {"namespace", "name"}}`` of the release
RELEASED_ANNOTATION: Final = "resource-handle-released"
DEFAULT_CLEANUP_TIMEOUT: Final = timedelta(minutes=30)
#: the labels and annotation a bind writes for its claim (``poolboy.domain.binding``), removed by the release
CLAIM_LABELS: Final = ("resource-claim-name", "resource-claim-namespace")
CLAIM_UID_ANNOTATION: Final = "resource-claim-uid"


class InvalidReuse(ValueError):
    """A provider's ``spec.reuse`` that cannot be applied (its timeout, its patch): the handle is deleted instead."""


@dataclass(frozen=True)
class Reuse:
    """A provider's ``spec.reuse``, parsed."""

    provider: str
    cleanup_patch: dict[str, Any] | None
    cleaned_check: str | None
    cleanup_timeout: timedelta


def reuse_provider(handle: Mapping[str, Any]) -> str | None:
    """The provider whose ``spec.reuse`` applies to the handle: its ``spec.provider`` (provider mode), else its first
    resource's; None for a handle no pool made (those are deleted as always)."""
    spec = handle.get("spec") or {}
    if not (spec.get("resourcePool") or {}).get("name"):
        return None
    name = (spec.get("provider") or {}).get("name")
    if name:
        return str(name)
    resources = spec.get("resources") or []
    first = (resources[0].get("provider") or {}).get("name") if resources and isinstance(resources[0], dict) else None
    return str(first) if first else None


def parse(provider: str, raw: Any) -> Reuse | None:
    """``spec.reuse`` of ``provider`` (None when it has none); :class:`InvalidReuse` when it cannot apply."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidReuse(f"ResourceProvider {provider} spec.reuse must be an object")
    timeout = DEFAULT_CLEANUP_TIMEOUT
    if raw.get("cleanupTimeout") not in (None, ""):
        try:
            timeout = timeutil.parse_interval(raw["cleanupTimeout"])
        except (ValueError, TypeError) as error:
            raise InvalidReuse(f"ResourceProvider {provider} spec.reuse.cleanupTimeout: {error}") from None
        if timeout <= timedelta(0):
            raise InvalidReuse(f"ResourceProvider {provider} spec.reuse.cleanupTimeout must be positive")
    patch = raw.get("cleanupPatch")
    if patch is not None and not isinstance(patch, dict):
        raise InvalidReuse(f"ResourceProvider {provider} spec.reuse.cleanupPatch must be an object")
    check = raw.get("cleanedCheck")
    return Reuse(provider, patch or None, str(check) if check else None, timeout)


def is_released(handle: Mapping[str, Any], domain: str) -> bool:
    """Whether the handle carries the cleaning label: released by its claim and not yet returned to its pool."""
    return f"{domain}/{CLEANING_LABEL}" in ((handle.get("metadata") or {}).get("labels") or {})


def released(handle: Mapping[str, Any], domain: str) -> tuple[datetime | None, dict[str, Any]]:
    """When the handle was released and the claim it was released by, from its released annotation."""
    raw = ((handle.get("metadata") or {}).get("annotations") or {}).get(f"{domain}/{RELEASED_ANNOTATION}")
    try:
        record = json.loads(raw) if raw else {}
        since = timeutil.parse_timestamp(record["since"]) if record.get("since") else None
    except (ValueError, TypeError, AttributeError, KeyError):
        return None, {}
    claim = record.get("claim")
    return since, dict(claim) if isinstance(claim, dict) else {}


def release_ops(handle: Mapping[str, Any], domain: str, now: datetime) -> list[dict[str, Any]]:
    """The one JSON patch that releases a bound handle into cleaning (see the module docstring); its lifespan end,
    the claim's, goes too: cleaning is bounded by ``cleanupTimeout``, and the pool gives the handle a new one."""
    metadata = handle["metadata"]
    spec = handle.get("spec") or {}
    claim_ref = spec.get("resourceClaim") or {}
    labels = {k: v for k, v in (metadata.get("labels") or {}).items()
              if k not in {f"{domain}/{name}" for name in CLAIM_LABELS}}
    labels[f"{domain}/{CLEANING_LABEL}"] = "true"
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                   if k != f"{domain}/{CLAIM_UID_ANNOTATION}"}
    annotations[f"{domain}/{RELEASED_ANNOTATION}"] = json.dumps(
        {"since": timeutil.format_timestamp(now),
         "claim": {"namespace": claim_ref.get("namespace"), "name": claim_ref.get("name")}}, sort_keys=True)
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": metadata["resourceVersion"]},
        {"op": "add", "path": "/metadata/labels", "value": labels},
        {"op": "add", "path": "/metadata/annotations", "value": annotations},
    ]
    if "resourceClaim" in spec:
        ops.append({"op": "remove", "path": "/spec/resourceClaim"})
    if "end" in (spec.get("lifespan") or {}):
        ops.append({"op": "remove", "path": "/spec/lifespan/end"})
    return ops


def deadline(since: datetime, reuse: Reuse) -> datetime:
    return since + reuse.cleanup_timeout


def cleaning_status(since: datetime, reuse: Reuse, claim: Mapping[str, Any], patched: bool) -> dict[str, Any]:
    """``status.cleaning``: since when, until when, the claim released, and whether the cleanup patch is applied (so
    a patch whose values change per rendering is applied once per cleaning)."""
    return {"since": timeutil.format_timestamp(since),
            "deadline": timeutil.format_timestamp(deadline(since, reuse)),
            "claim": dict(claim), "patched": patched}


def fresh_ops(handle: Mapping[str, Any], pool: Mapping[str, Any], lifespan: Mapping[str, Any],
              domain: str) -> list[dict[str, Any]] | None:
    """The JSON patch that returns a cleaned handle to its pool as the pool builds one now: no cleaning label or
    released annotation, the pool's provider and parameter values (provider mode) or the pool's resource
    templates (resources mode: the bind took the claim's), and ``lifespan`` (a new pool handle's). None when the
    handle cannot be made fresh: a claim added resources the pool's handles do not have."""
    metadata = handle["metadata"]
    spec = handle.get("spec") or {}
    pool_spec = pool.get("spec") or {}
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != f"{domain}/{CLEANING_LABEL}"}
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                   if k != f"{domain}/{RELEASED_ANNOTATION}"}
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": metadata["resourceVersion"]},
        {"op": "add", "path": "/metadata/labels", "value": labels},
        {"op": "add", "path": "/metadata/annotations", "value": annotations},
    ]
    if pool_spec.get("provider"):
        ops.append({"op": "add", "path": "/spec/provider", "value": copy.deepcopy(pool_spec["provider"])})
    else:
        resources = _pool_resources(spec.get("resources") or [], pool_spec.get("resources") or [])
        if resources is None:
            return None
        ops.append({"op": "add", "path": "/spec/resources", "value": resources})
    if lifespan:
        ops.append({"op": "add", "path": "/spec/lifespan", "value": dict(lifespan)})
    elif "lifespan" in spec:
        ops.append({"op": "remove", "path": "/spec/lifespan"})
    return ops


def _pool_resources(current: list[dict[str, Any]], pool: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The handle's resources with the pool's names, providers and templates; what the handle recorded (its
    references) stays, since its resources are the same objects."""
    if len(current) > len(pool):
        return None
    result = []
    for index, entry in enumerate(current):
        fresh = {k: copy.deepcopy(v) for k, v in entry.items() if k not in ("name", "template", "provider")}
        for key in ("name", "provider", "template"):
            if key in pool[index]:
                fresh[key] = copy.deepcopy(pool[index][key])
        result.append(fresh)
    return result + copy.deepcopy(pool[len(current):])

"""Handle → claim status mirroring (docs/behaviour.md#claim-status, #health) as pure functions over JSON documents.

The claim reconciler reads the handle and the live managed resources fresh and calls these to compute the
claim's desired status; it then writes the status once, with a precondition, only when it changed. Keeping the
computation pure is what makes "a converged object generates no writes" easy to test.
"""

from __future__ import annotations

import copy
from typing import Any

from poolboy.domain import redaction

_MIRRORED_KEYS = ("reference", "healthy", "ready", "waitingFor")


def prune_state(resource: dict[str, Any], domain: str, redactions: tuple[str, ...] = ()) -> dict[str, Any]:
    """A live resource as stored in ``status.resources[i].state``.

    Removed: ``D/…`` annotations (Poolboy's bookkeeping), ``metadata.generation``, ``metadata.managedFields`` and
    ``status.diffBase`` — the last two can be large and would bloat the claim status. ``resourceVersion`` stays:
    it is how a newer observation is told from a stale one. Secret values, and the fields the provider's
    ``statusRedactions`` match, are redacted (:mod:`poolboy.domain.redaction`).
    """
    state = redaction.redact(copy.deepcopy(resource), redactions)
    metadata = state.get("metadata") or {}
    metadata.pop("generation", None)
    metadata.pop("managedFields", None)
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        prefix = domain + "/"
        for key in [k for k in annotations if k.startswith(prefix)]:
            del annotations[key]
        if not annotations:
            metadata.pop("annotations")
    status = state.get("status")
    if isinstance(status, dict):
        status.pop("diffBase", None)
    return state


def newest_state(stored: dict[str, Any] | None, observed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The state to show: what this run observed, or the stored copy when the run observed nothing.

    resourceVersions are opaque strings, never compared for order, and need not be: the run reads the live resource
    from the API or from the watch-fed cache, whose versions of one object only move forward (:mod:`cache.store`).
    An observation older than the stored one can only come from a cache that has not yet seen the newer version's
    watch event; that event wakes the claim again and the next run shows it. Equal versions of one object keep the
    stored copy, so a converged claim's status does not change.
    """
    if observed is None:
        return stored
    if stored is not None and _version(stored) == _version(observed):
        return stored
    return observed


def _version(state: dict[str, Any]) -> tuple[Any, Any]:
    metadata = state.get("metadata") or {}
    return metadata.get("uid"), metadata.get("resourceVersion")


def mirror_resources(claim_resources: list[dict[str, Any]] | None, handle: dict[str, Any],
                     states: dict[int, dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Merge handle ``spec/status.resources`` into the claim's ``status.resources``.

    The claim keeps its own ``name`` and ``validationError``; ``reference``/``healthy``/``ready``/``waitingFor`` and
    ``provider`` come from the handle (keys removed when the handle has none). When the handle has more resources,
    entries are appended, never replaced. ``states[i]`` is the pruned live resource (or ``None`` if unseen).
    """
    result = [copy.deepcopy(r) for r in (claim_resources or [])]
    handle_spec_resources = (handle.get("spec") or {}).get("resources") or []
    handle_status_resources = (handle.get("status") or {}).get("resources") or []
    count = max(len(handle_spec_resources), len(handle_status_resources))
    for index in range(count):
        while len(result) <= index:
            result.append({})
        entry = result[index]
        spec_entry = handle_spec_resources[index] if index < len(handle_spec_resources) else {}
        status_entry = handle_status_resources[index] if index < len(handle_status_resources) else {}
        if spec_entry.get("provider"):
            entry["provider"] = copy.deepcopy(spec_entry["provider"])
        if "name" not in entry:
            name = spec_entry.get("name") or status_entry.get("name")
            if name:
                entry["name"] = name
        for key in _MIRRORED_KEYS:
            if status_entry.get(key) is not None:
                entry[key] = copy.deepcopy(status_entry[key])
            else:
                entry.pop(key, None)
        state = newest_state(entry.get("state"), states.get(index))
        if state is not None:
            entry["state"] = state
    return result


def copy_aggregates(status: dict[str, Any], handle: dict[str, Any]) -> None:
    """``healthy``, ``ready`` and ``summary`` copied from the handle, removed when absent there (no nulls)."""
    handle_status = handle.get("status") or {}
    for key in ("healthy", "ready", "summary"):
        if handle_status.get(key) is not None:
            status[key] = copy.deepcopy(handle_status[key])
        else:
            status.pop(key, None)


#: a handle status field -> the condition it gives the claim: (reason, message) for True, False and unknown
_CONDITION_TEXTS: dict[str, tuple[tuple[str, str], tuple[str, str], tuple[str, str]]] = {
    "ready": (("ResourcesReady", "All resources are ready."),
              ("Provisioning", "Resources are not ready yet."),
              ("Provisioning", "Readiness of the resources is not known yet.")),
    "healthy": (("ResourcesHealthy", "All resources are healthy."),
                ("ResourcesUnhealthy", "At least one resource is unhealthy."),
                ("HealthUnknown", "Health of the resources is not known yet.")),
}


def _condition_from(field: str, handle_status: dict[str, Any]) -> tuple[bool | None, str, str]:
    value = handle_status.get(field)
    when_true, when_false, unknown = _CONDITION_TEXTS[field]
    if value is True:
        return True, *when_true
    if value is False:
        return False, *when_false
    return None, *unknown


#: the claim's conditions in the order its printer columns read them: the MESSAGE and REASON columns show the first
#: that is False, so a claim is explained by what it waits for first (its spec is refused, it has no handle, a
#: resource is unhealthy, its resources are not ready yet)
CONDITION_ORDER = ("Synced", "Bound", "Healthy", "Ready")

#: the reason of Ready (False) and Healthy (Unknown) while a claim has no live bound handle: what is known, so the
#: READY and HEALTHY columns say it rather than stay blank
NOT_BOUND = "NotBound"


def ready_condition(handle_status: dict[str, Any]) -> tuple[bool | None, str, str]:
    return _condition_from("ready", handle_status)


def healthy_condition(handle_status: dict[str, Any]) -> tuple[bool | None, str, str]:
    return _condition_from("healthy", handle_status)

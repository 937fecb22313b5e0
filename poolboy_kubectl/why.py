"""Why a claim is not Ready, in words: the first unmet condition (reason and message), its place in the queue and
the expected wait when it waits for a handle (``status.queue``, docs/pools.md), then what stands behind it — an
invalid provider, a pool that makes no handles, a managed resource that is not ready — and what the user could not
read. A Ready claim gets ``Ready``, with any other unmet condition (a refused change) below it.

Pure: an :class:`Explanation` of an :class:`~poolboy_kubectl.observed.Observed`, at a given time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from poolboy.utils import timeutil
from poolboy_kubectl.observed import (
    NOT_FOUND,
    Object,
    Observed,
    Unreadable,
    condition,
    conditions,
    first_unmet,
    status,
)
from poolboy_kubectl.trace import (
    claim_phrase,
    condition_phrase,
    handle_phrase,
    pool_phrase,
    provider_phrase,
    resource_phrase,
)

READY = "Ready"
#: how a parameter error the claim records is said
PARAMETER = "Parameter: "
#: said once after the reads that failed: the explanation rests on what the claim records of those objects
FROM_CLAIM = "(of these, this says what the claim's status records)"


@dataclass(frozen=True)
class Explanation:
    """``verdict`` is ``Ready`` or ``<claim> is not Ready.``; ``reasons`` say why, the most direct first."""

    ready: bool
    verdict: str
    reasons: list[str] = field(default_factory=list)


def explain(observed: Observed, now: datetime) -> Explanation:
    claim = observed.claim
    metadata = claim.get("metadata") or {}
    if (status(claim).get("resourceHandle") or {}).get("detached"):
        return _detached(claim)
    stale = _stale_ready(claim)
    ready = (condition(claim, "Ready") or {}).get("status") == "True" and stale is None
    if not conditions(claim) and status(claim).get("ready") is True:  # an upstream claim: no conditions
        ready = True
    reasons = [] if ready else _waiting(claim, now, stale)
    unmet = first_unmet(claim)
    if ready and unmet is not None:
        reasons.append(f"but {_condition(unmet, claim)}")
    if not ready:  # what stands behind it, and what could not be looked at; a Ready claim needs neither
        said = (unmet or {}).get("message") or ""
        reasons += [r for r in _behind(observed) if not _already_said(r, said)] + _unreadable(observed.unreadable)
    verdict = READY if ready else f"ResourceClaim {metadata.get('namespace')}/{metadata.get('name')} is not Ready."
    return Explanation(ready, verdict, reasons)


def _detached(claim: Object) -> Explanation:
    """A detached claim is a record: Poolboy no longer processes it (its conditions stay as they were), and it goes
    at its lifespan end."""
    metadata, handle = claim.get("metadata") or {}, status(claim).get("resourceHandle") or {}
    end = (status(claim).get("lifespan") or {}).get("end")
    return Explanation(False, f"ResourceClaim {metadata.get('namespace')}/{metadata.get('name')} is detached.", [
        f"Detached from ResourceHandle {handle.get('name')} (autoDetach): Poolboy no longer manages anything for it, "
        "and its conditions are as they were when it detached.",
        f"It is deleted at its lifespan end, {end}." if end else "It has no lifespan end: it stays until deleted."])


def _waiting(claim: Object, now: datetime, stale: str | None) -> list[str]:
    """What the claim itself says it waits for."""
    reasons = []
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        reasons.append(f"It is being deleted (since {claim['metadata']['deletionTimestamp']}).")
    start = ((claim.get("spec") or {}).get("lifespan") or {}).get("start")
    if start and _after(start, now):
        reasons.append(f"Its lifespan starts at {start}: nothing is bound or made before then.")
    approval = status(claim).get("approval") or {}
    if approval.get("state") in ("pending", "rejected"):
        reasons.append(claim_phrase(claim) + ".")
    if stale:
        reasons.append(stale)
    unmet = first_unmet(claim)
    queue = status(claim).get("queue")
    if unmet is not None:
        reasons.append(_condition(unmet, claim))
    elif not conditions(claim):
        reasons.append("Poolboy has not processed it yet (it has no conditions): is the operator running?")
    if queue and (unmet is None or unmet.get("type") != "Bound"):
        reasons.append(condition_phrase({"type": "Bound"}, queue))
    if queue and queue.get("position") is not None and not queue.get("expectedWait"):
        reasons.append("No expected wait yet: no pool that serves it has measured how long its handles take to "
                       "become ready (a pool with minAvailable 0 makes none by itself).")
    return reasons


def _behind(observed: Observed) -> list[str]:
    """What stands behind a claim that is not Ready: its objects that say something other than ready or valid."""
    reasons = []
    for error in (status(observed.claim).get("provider") or {}).get("validationErrors") or []:
        reasons.append(f"{PARAMETER}{error}")
    for provider in observed.providers:
        if isinstance(provider, dict) and first_unmet(provider, ("Valid", "Ready")) is not None:
            reasons.append(f"{_name(provider, 'ResourceProvider')}: {provider_phrase(provider)}")
    pool = observed.pool
    if isinstance(pool, dict) and (first_unmet(pool, ("Synced", "Ready")) is not None):
        reasons.append(f"{_name(pool, 'ResourcePool')}: {pool_phrase(pool)}")
    handle = observed.handle
    if isinstance(handle, dict) and first_unmet(handle, ("Synced",)) is not None:
        reasons.append(f"{_name(handle, 'ResourceHandle')}: {handle_phrase(handle)}")
    for resource in observed.resources:
        phrase = resource_phrase(resource)
        if phrase != READY:
            ref = resource.reference
            where = f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("namespace") else ref.get("name")
            name = f"{ref.get('kind')} {where}" if ref else f"Resource {resource.entry.get('name') or ''}".rstrip()
            reasons.append(f"{name}: {phrase}")
    return reasons


def _already_said(reason: str, message: str) -> bool:
    """A parameter error the claim's unmet condition already quotes (its ``ValidationFailed`` message joins them)."""
    return reason.startswith(PARAMETER) and reason.removeprefix(PARAMETER) in message


def _unreadable(unreadable: list[Unreadable]) -> list[str]:
    """A line for each failed read; then, where an object exists but was not shown, that the claim stood in."""
    hidden = any(item.reason != NOT_FOUND for item in unreadable)
    return [*map(str, unreadable), *([FROM_CLAIM] if hidden else [])]


def _condition(unmet: Object, claim: Object) -> str:
    return f"{unmet.get('type')}={unmet.get('status')} {condition_phrase(unmet, status(claim).get('queue'))}"


def _stale_ready(claim: Object) -> str | None:
    """Why a Ready condition does not count yet: it describes an older spec than the claim's (kubectl wait waits)."""
    ready = condition(claim, "Ready") or {}
    observed, generation = ready.get("observedGeneration"), (claim.get("metadata") or {}).get("generation")
    if ready.get("status") != "True" or observed is None or generation is None or observed >= generation:
        return None
    return (f"Ready=True describes generation {observed} of its spec, which is at generation {generation}: Poolboy "
            "has not finished with the latest change.")


def _after(timestamp: str, now: datetime) -> bool:
    try:
        return timeutil.parse_timestamp(timestamp) > now
    except ValueError:
        return False


def _name(obj: Object, kind: str) -> str:
    metadata = obj.get("metadata") or {}
    return f"{obj.get('kind') or kind} {metadata.get('namespace')}/{metadata.get('name')}"

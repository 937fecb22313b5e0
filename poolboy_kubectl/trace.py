"""The trace of a claim as a tree, as Crossplane's ``crossplane beta trace`` shows a claim: the claim, its
ResourceHandle, the handle's ResourcePool and ResourceProviders, and every managed resource, each with its
conditions, whether it is ready and healthy, and in :attr:`Node.status` one phrase: ``Ready``, or what it waits for.

Pure: built from an :class:`~poolboy_kubectl.observed.Observed`. An object that could not be read keeps its place in
the tree with what the claim's status mirrors of it (its name, ready and healthy, a resource's last state).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from poolboy.domain.binding import queue as claim_queue
from poolboy.kinds import RESOURCE_HANDLE, RESOURCE_POOL, RESOURCE_PROVIDER
from poolboy_kubectl.observed import (
    ManagedResource,
    Object,
    Observed,
    Read,
    Unreadable,
    condition,
    conditions,
    first_unmet,
    reference_of,
    status,
)

#: where a node's READY and HEALTHY come from when the object itself could not be read
FROM_CLAIM = "the claim's status"


@dataclass
class Node:
    """One object of the trace and the objects below it."""

    kind: str
    name: str
    namespace: str | None
    ready: bool | None = None
    healthy: bool | None = None
    #: ``Ready``, or why not in a phrase (the reason it waits, the error), or why the object could not be read
    status: str = ""
    #: the object's ``status.conditions`` as ``{type, status, reason, message}``
    conditions: list[dict[str, Any]] = field(default_factory=list)
    #: why the object could not be read (``forbidden``), None when it was
    unreadable: str | None = None
    #: where ``ready`` and ``healthy`` come from when the object could not be read
    shown_from: str | None = None
    children: list[Node] = field(default_factory=list)


def build(observed: Observed) -> Node:
    """The tree: the claim; below it its handle, and below the handle its pool, providers and resources (below
    the claim itself while it is unbound)."""
    claim = observed.claim
    root = _node(claim, claim_phrase(claim), _flag(status(claim).get("ready")), _flag(status(claim).get("healthy")))
    below = [*_optional(_pool_node(observed.pool)), *(_provider_node(p) for p in observed.providers)]
    if observed.handle is None:
        root.children = below
        return root
    handle = _handle_node(observed.handle, claim)
    handle.children = below + [_resource_node(r) for r in observed.resources]
    root.children = [handle]
    return root


# --- phrases: the one line each object says about itself ---------------------------------------------------------


def claim_phrase(claim: Object) -> str:
    """``Ready``, or what the claim waits for: approval, its place in the queue, the first unmet condition."""
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return "Deleting"
    approval = status(claim).get("approval") or {}
    if approval.get("state") in ("pending", "rejected"):
        return f"Approval {approval['state']}: {approval.get('message') or ''}".rstrip(": ")
    unmet = first_unmet(claim)
    if unmet is not None:
        return condition_phrase(unmet, status(claim).get("queue"))
    if (condition(claim, "Ready") or {}).get("status") == "True":
        return "Ready"
    return "Not processed yet" if not conditions(claim) else "Not ready"


def condition_phrase(unmet: Object, queue: Object | None = None) -> str:
    """``Reason: message`` of an unmet condition; a waiting claim's ``Bound`` in the words of its ``status.queue``."""
    message = claim_queue.message(queue) if unmet.get("type") == "Bound" and queue else unmet.get("message") or ""
    return f"{unmet.get('reason') or unmet.get('type')}: {message}" if message else str(unmet.get("reason") or "")


def handle_phrase(handle: Object) -> str:
    unmet = first_unmet(handle, ("Synced", "Ready", "Healthy"))
    if unmet is not None:
        return condition_phrase(unmet)
    return "Ready" if status(handle).get("ready") is True else "Not ready"


def pool_phrase(pool: Object) -> str:
    """The pool's handle counts against its minimum, or the error that keeps it from making handles."""
    unmet = first_unmet(pool, ("Synced",))
    if unmet is not None:
        return condition_phrase(unmet)
    counts = status(pool).get("resourceHandleCount") or {}
    minimum = (pool.get("spec") or {}).get("minAvailable", 0)
    return f"{counts.get('available', 0)} available, {counts.get('ready', 0)} ready of minAvailable {minimum}"


def provider_phrase(provider: Object) -> str:
    unmet = first_unmet(provider, ("Valid", "Ready"))
    return condition_phrase(unmet) if unmet is not None else "Valid"


def resource_phrase(resource: ManagedResource) -> str:
    """What Poolboy says of one managed resource: its validation error, what it waits for, ready or not (with the
    first condition of the live object that is not True)."""
    entry = resource.entry
    if entry.get("validationError"):
        return f"ValidationFailed: {entry['validationError']}"
    if entry.get("waitingFor"):
        return f"Waiting for {entry['waitingFor']}"
    if not resource.reference:
        return "Not created yet"
    if entry.get("healthy") is False:
        return "Unhealthy" + _live_detail(resource.object)
    if entry.get("ready") is True:
        return "Ready"
    if entry.get("ready") is False:
        return "Not ready" + _live_detail(resource.object)
    return "Readiness unknown"


def _live_detail(obj: Object | None) -> str:
    unmet = next((c for c in conditions(obj) if c.get("status") != "True"), None)
    return "" if unmet is None else f" ({unmet.get('type')}={unmet.get('status')} {condition_phrase(unmet)})"


# --- nodes -------------------------------------------------------------------------------------------------------


def _node(obj: Object, phrase: str, ready: bool | None, healthy: bool | None = None) -> Node:
    kind, namespace, name = reference_of(obj)
    return Node(kind, name, namespace, ready, healthy, phrase,
                [{k: c.get(k) for k in ("type", "status", "reason", "message") if c.get(k) is not None}
                 for c in conditions(obj)])


def _unreadable(read: Unreadable, phrase: str = "", ready: bool | None = None, healthy: bool | None = None,
                shown_from: str | None = None) -> Node:
    text = "; ".join(part for part in (f"cannot read: {read.reason}", phrase) if part)
    return Node(read.kind, read.name, read.namespace, ready, healthy, text, unreadable=read.reason,
                shown_from=shown_from)


def _handle_node(handle: Read, claim: Object) -> Node:
    if isinstance(handle, Unreadable):
        mirrored = status(claim)
        return _unreadable(handle, "", _flag(mirrored.get("ready")), _flag(mirrored.get("healthy")), FROM_CLAIM)
    return _node({"kind": RESOURCE_HANDLE, **handle}, handle_phrase(handle), _flag(status(handle).get("ready")),
                 _flag(status(handle).get("healthy")))


def _pool_node(pool: Read | None) -> Node | None:
    if pool is None:
        return None
    if isinstance(pool, Unreadable):
        return _unreadable(pool)
    return _node({"kind": RESOURCE_POOL, **pool}, pool_phrase(pool), _condition_flag(pool, "Ready"))


def _provider_node(provider: Read) -> Node:
    if isinstance(provider, Unreadable):
        return _unreadable(provider)
    return _node({"kind": RESOURCE_PROVIDER, **provider}, provider_phrase(provider), _condition_flag(provider, "Valid"))


def _resource_node(resource: ManagedResource) -> Node:
    entry, ref = resource.entry, resource.reference
    ready, healthy = _flag(entry.get("ready")), _flag(entry.get("healthy"))
    phrase = resource_phrase(resource)
    if isinstance(resource.live, Unreadable):
        node = _unreadable(resource.live, phrase, ready, healthy, FROM_CLAIM)
        mirrored = _node({"kind": ref.get("kind"), **(resource.object or {})}, phrase, ready, healthy)
        node.conditions = mirrored.conditions
        return node
    if resource.live is None:
        # not created yet: named by its place in the provider's list, or by its provider
        name = str(entry.get("name") or (entry.get("provider") or {}).get("name") or "")
        return Node(str(ref.get("kind") or "Resource"), name, ref.get("namespace"), ready, healthy, phrase)
    return _node(resource.live, phrase, ready, healthy)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _condition_flag(obj: Object, type_: str) -> bool | None:
    found = condition(obj, type_)
    return None if found is None or found.get("status") == "Unknown" else found.get("status") == "True"


def _optional(node: Node | None) -> list[Node]:
    return [] if node is None else [node]


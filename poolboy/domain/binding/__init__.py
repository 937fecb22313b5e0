"""Binding a claim to a handle, in one folder: this module says what binding means (who is bound to whom, which
handles are unbound, the bind's patch); :mod:`.scopes` which handles a claim may draw from, :mod:`.candidates` how
they rank and are summarised for a warm bind, :mod:`.queue` a waiting claim's place. The claim reconciler's step that
binds is :mod:`poolboy.reconcilers.claim.bind`; the engine's index of unbound handles, :mod:`cache.handle_index`.

The API server is the arbiter (docs/behaviour.md#design-rules, rule 3): the bind is ONE JSON patch (:func:`bind_ops`)
whose first op tests the handle's ``resourceVersion`` as read, applied by the claim reconciler
(:func:`poolboy.reconcilers.claim.bind.try_bind`). A concurrent bind, update or delete makes the test fail (422), or
the handle is gone (404); either way the loser moves on to the next candidate, so a handle is never bound to two
claims, and a stale candidate (from the shared cache's unbound-handle summaries or from a list) costs one failed
bind.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from poolboy import keys
from poolboy.domain import reuse
from poolboy.domain.binding import candidates, queue_order, scope_policy
from poolboy.domain.binding.scopes import first_provider, handle_scopes, scope_pool
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE
from poolboy.utils import timeutil

if TYPE_CHECKING:
    from poolboy.context import Context
    from poolboy.kube.interfaces import Reader


#: Label (``D/resource-claim-waiting``) on a claim that found no matching unbound handle and may not create one.
#: Handle creation or a change of an unbound handle wakes exactly the claims carrying it, so a waiting claim
#: binds as soon as a matching handle appears instead of at its next periodic re-check. (Defined with the shared
#: cache's indexes, which keep the waiting claims' queues from it.)
WAITING_LABEL = candidates.WAITING_LABEL

#: Annotation (``D/resource-claim-uid``) recording which claim *object* a handle was bound to or created for. The
#: claim reference in ``spec.resourceClaim`` only names it, so without this a claim recreated under the same name
#: (while the old handle has not yet noticed its claim is gone) would inherit the old handle.
CLAIM_UID_ANNOTATION = "resource-claim-uid"


#: Annotation (``D/resource-handle-binding``) on a claim naming the handle its runs bind (or create), written with the
#: claim's resourceVersion as precondition before the bind. Two runs of one claim at once (a Redis loss ends the lease
#: of a run that goes on) then bind the same handle, never one each: a run binds only the handle the claim names, and
#: the name changes only by a conditional write, once that handle can no longer become this claim's (bound to another
#: claim, deleting or gone).
BINDING_ANNOTATION = "resource-handle-binding"


def intended_handle(ctx: Context, claim: Mapping[str, Any]) -> str | None:
    """The handle the claim's runs bind or create (:data:`BINDING_ANNOTATION`), None before a first bind."""
    return ((claim.get("metadata") or {}).get("annotations") or {}).get(ctx.label(BINDING_ANNOTATION))


def claim_uid_annotation(ctx: Context, claim: Mapping[str, Any]) -> dict[str, str]:
    uid = claim["metadata"].get("uid")
    return {ctx.label(CLAIM_UID_ANNOTATION): uid} if uid else {}


def claim_ref(ctx: Context, claim: Mapping[str, Any]) -> dict[str, str]:
    metadata = claim["metadata"]
    return {"apiVersion": ctx.settings.api_version, "kind": RESOURCE_CLAIM, "name": metadata["name"],
            "namespace": metadata["namespace"]}


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def bound_to(ctx: Context, handle: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """True when ``handle.spec.resourceClaim`` names this claim and, if the handle recorded the claim's uid, that
    uid is this claim's: a claim recreated under the same name is another claim (handles bound before the uid was
    recorded match by name only)."""
    ref = (handle.get("spec") or {}).get("resourceClaim") or {}
    metadata = claim["metadata"]
    if ref.get("name") != metadata["name"] or ref.get("namespace") != metadata["namespace"]:
        return False
    recorded = ((handle.get("metadata") or {}).get("annotations") or {}).get(ctx.label(CLAIM_UID_ANNOTATION))
    return not recorded or not metadata.get("uid") or recorded == metadata["uid"]


def find_bound_handle(ctx: Context, claim: Mapping[str, Any], recorded: Mapping[str, Any] | None = None,
                      fresh: bool = False) -> dict[str, Any] | None:
    """A live handle already bound to this claim (adopted instead of binding or creating another).

    The handle named in ``status.resourceHandle`` is read first (``recorded`` is that handle when this run has
    already read it: one read per run is enough); otherwise the label query finds a handle whose
    bind or create succeeded but whose claim status write did not. Deleting handles are never reused. ``fresh``
    asks the API server rather than the cache: a bind whose answer was lost (the API server went away mid-request)
    reaches the cache only with the watch, and a run that looked there first would bind a second handle.
    """
    api_version = ctx.settings.api_version
    namespace = ctx.settings.operator_namespace
    recorded_name = ((claim.get("status") or {}).get("resourceHandle") or {}).get("name")
    if recorded_name:
        handle = recorded if recorded is not None and recorded["metadata"]["name"] == recorded_name else \
            ctx.kube.get_or_none(api_version, RESOURCE_HANDLE, recorded_name, namespace)
        if handle is not None and bound_to(ctx, handle, claim) and not is_deleting(handle):
            return dict(handle)
    metadata = claim["metadata"]
    selector = (f"{ctx.label('resource-claim-name')}={metadata['name']},"
                f"{ctx.label('resource-claim-namespace')}={metadata['namespace']}")
    reader = ctx.api_reader if fresh else ctx.kube
    live = [h for h in reader.list(api_version, RESOURCE_HANDLE, namespace, label_selector=selector)
            if bound_to(ctx, h, claim) and not is_deleting(h)]
    live.sort(key=lambda h: (h["metadata"].get("creationTimestamp") or "", h["metadata"]["name"]))
    return live[0] if live else None


def waiting_claim_keys(ctx: Context, handle: Mapping[str, Any]) -> tuple[str, ...]:
    """Keys of the waiting claims an unbound handle that appeared or changed may serve now.

    With the index, only the heads of the handle's scopes' queues: a claim may take a handle only while fewer claims
    come before it in its scope (oldest first, or in the order of the scope's queue policy, :mod:`.scope_policy`)
    than the scope has unbound handles, so waking the rest costs a run each and binds nothing (with 500 claims
    waiting, every new handle ran all 500). They still refresh their place on their own schedule
    (``queue_status_interval``). Without the index, and for a handle without a provider (it may serve a claim of any
    provider), every waiting claim (one label-selected list across namespaces)."""
    if ctx.index is not None and first_provider(handle):
        heads = _queue_heads(ctx, handle_scopes(handle, ctx.settings.domain))
        if heads is not None:
            return tuple(keys.make(keys.CLAIM, namespace, name) for namespace, name in dict.fromkeys(heads))
    claims = ctx.kube.list(ctx.settings.api_version, RESOURCE_CLAIM, None, label_selector=ctx.label(WAITING_LABEL))
    return tuple(keys.make(keys.CLAIM, c["metadata"]["namespace"], c["metadata"]["name"]) for c in claims)


def _queue_heads(ctx: Context, handle_scopes: list[str]) -> list[tuple[str, str]] | None:
    """``(namespace, name)`` of the claims at the head of each scope's queue, under each scope's policy. No claim
    is at the head of any order where none is at the head of the oldest-first one (no claim waits, or no handle is
    free), so the policies are looked up only when the oldest-first answer is not empty."""
    assert ctx.index is not None
    fifo_heads = ctx.index.waiting_heads(handle_scopes)
    if not fifo_heads:
        return fifo_heads
    oldest_first: list[str] = []
    heads: list[tuple[str, str]] = []
    for scope in handle_scopes:
        policy = scope_policy.for_scope(ctx, scope).policy
        if policy.is_fifo:
            oldest_first.append(scope)
            continue
        ordered = scope_policy.standings(ctx, scope, policy)
        if ordered is None:
            return None
        standings, free = ordered
        heads += [(w.namespace, w.name) for w in queue_order.heads(standings, free)]
    if oldest_first == handle_scopes:
        heads += fifo_heads
    elif oldest_first:
        found = ctx.index.waiting_heads(oldest_first)
        if found is None:
            return None
        heads += found
    return heads


def list_unbound(ctx: Context, scope: str, *fallbacks: str, reader: Reader | None = None) -> list[dict[str, Any]]:
    """The unbound handles serving ``scope`` (and the ``fallbacks`` scopes), through the reader's list by the unbound
    index (:func:`.candidates.unbound_in`): the shared cache answers from the index, the API client lists and
    applies the index's rule (:func:`.candidates.is_unbound`: ignored handles are left out, since binding writes
    to the handle and Poolboy writes nothing to an ignored object).

    The label selector (:func:`unbound_selector`: a pool's handles carry its label) narrows what the API server
    sends; both readers apply it as well as the index. ``reader`` is :attr:`Context.kube` unless given (the pool
    passes :attr:`Context.api_reader` to count before it creates)."""
    return (reader or ctx.kube).list(ctx.settings.api_version, RESOURCE_HANDLE, ctx.settings.operator_namespace,
                         label_selector=unbound_selector(ctx, None if fallbacks else scope_pool(scope)),
                         index=candidates.unbound_in(ctx.settings.domain, scope, *fallbacks))


def unbound_selector(ctx: Context, pool: str | None = None) -> str:
    """The label selector of the handles no claim labelled (of ``pool`` when given: a pool's handles carry its
    label)."""
    selector = f"!{ctx.label('resource-claim-name')}"
    return f"{ctx.label('resource-pool-name')}={pool},{selector}" if pool else selector


def scale_selector(ctx: Context, pool: str) -> str:
    """A pool's scale ``status.selector``: its unbound handles but those being cleaned on their way back, exactly the
    handles ``status.replicas`` counts."""
    return f"{unbound_selector(ctx, pool)},!{ctx.label(reuse.CLEANING_LABEL)}"


def provider_compatible(handle: Mapping[str, Any], provider_names: list[str],
                        parameter_values: Mapping[str, Any] | None = None) -> bool:
    """A provider-mode handle (``spec.provider``) only serves claims whose first resource uses that provider.

    A fresh provider pool handle may not have generated ``spec.resources`` yet, so the template comparison has
    nothing to compare: without these checks it would accept the handle for any claim. Until it has, a
    provider-mode claim (its effective ``parameter_values``) takes it only when every value the handle was made
    with is the claim's too; a pool handle made for other values is left for the claims it was made for.
    """
    spec = handle.get("spec") or {}
    provider = spec.get("provider") or {}
    name = provider.get("name")
    if name is None:
        return True
    if not provider_names or provider_names[0] != name:
        return False
    if parameter_values is None or spec.get("resources"):
        return True
    return all(key in parameter_values and parameter_values[key] == value
               for key, value in (provider.get("parameterValues") or {}).items())


def bind_ops(ctx: Context, claim: Mapping[str, Any], handle: Mapping[str, Any], *,
             provider_spec: dict[str, Any] | None, claim_resources: list[dict[str, Any]],
             lifespan_end: datetime | None) -> list[dict[str, Any]]:
    """The JSON patch that binds ``handle`` to ``claim``; its first op tests the resourceVersion seen when listing.

    ``provider_spec`` is ``{name, parameterValues}`` (effective values) for a provider-mode claim, else ``None`` —
    then a ``spec.provider`` from a provider pool is removed. ``claim_resources`` gives names (and providers of
    entries beyond the handle's, which are appended).
    """
    metadata = handle["metadata"]
    spec = handle.get("spec") or {}
    labels = dict(metadata.get("labels") or {})
    labels[ctx.label("resource-claim-name")] = claim["metadata"]["name"]
    labels[ctx.label("resource-claim-namespace")] = claim["metadata"]["namespace"]
    resources = [copy.deepcopy(r) for r in spec.get("resources") or []]
    for index, claim_resource in enumerate(claim_resources):
        name = claim_resource.get("name")
        if index < len(resources):
            if name:
                resources[index]["name"] = name
        else:
            extra = {"provider": copy.deepcopy(claim_resource.get("provider"))}
            if name:
                extra["name"] = name
            resources.append(extra)
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": metadata["resourceVersion"]},
        {"op": "add", "path": "/metadata/labels", "value": labels},
        {"op": "add", "path": "/spec/resourceClaim", "value": claim_ref(ctx, claim)},
        *handle_spec_ops(handle, provider_spec=provider_spec, resources=resources, lifespan_end=lifespan_end,
                         annotations=claim_uid_annotation(ctx, claim)),
    ]


def handle_spec_ops(handle: Mapping[str, Any], *, provider_spec: dict[str, Any] | None,
                    resources: list[dict[str, Any]] | None, lifespan_end: datetime | None,
                    annotations: Mapping[str, str]) -> list[dict[str, Any]]:
    """The JSON patch ops that bring a handle to what its claim asks, for the bind and for every later change.

    ``spec.provider`` becomes ``provider_spec`` (removed when None: a resources-mode claim on a provider pool's
    handle), ``spec.resources`` becomes ``resources`` when given, ``spec.lifespan.end`` becomes ``lifespan_end``
    when given, and ``annotations`` are added. Only what differs gets an op: no ops means the handle agrees.
    """
    metadata = handle["metadata"]
    spec = handle.get("spec") or {}
    ops: list[dict[str, Any]] = []
    if provider_spec is not None:
        if spec.get("provider") != provider_spec:
            ops.append({"op": "add", "path": "/spec/provider", "value": copy.deepcopy(provider_spec)})
    elif "provider" in spec:
        ops.append({"op": "remove", "path": "/spec/provider"})
    if resources is not None and resources != (spec.get("resources") or []):
        ops.append({"op": "add", "path": "/spec/resources", "value": resources})
    if lifespan_end is not None:
        end = timeutil.format_timestamp(lifespan_end)
        if (spec.get("lifespan") or {}).get("end") != end:
            if "lifespan" in spec:
                ops.append({"op": "add", "path": "/spec/lifespan/end", "value": end})
            else:
                ops.append({"op": "add", "path": "/spec/lifespan", "value": {"end": end}})
    current = metadata.get("annotations") or {}
    if any(current.get(k) != v for k, v in annotations.items()):
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {**current, **annotations}})
    return ops

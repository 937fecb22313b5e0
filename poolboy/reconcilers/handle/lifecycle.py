"""The end of a handle (docs/behaviour.md#deletion, #lifespans): cleanup when it is deleted (its resources, then
its bound claim), and its own deletion when its lifespan ends, its claim is gone or its claim records another
handle."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import binding, ownership, standby
from poolboy.domain.object_meta import is_ignored
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE
from poolboy.observability import observe_handle_transition
from poolboy.reconcilers import preamble
from poolboy.reconcilers.handle.names import claim_key, describe_reference, pool_key, unique_keys
from poolboy.result import Result
from poolboy.utils import jsonpatch, timeutil

log = logging.getLogger(__name__)


def _references(handle: dict[str, Any]) -> list[dict[str, Any]]:
    found: dict[tuple, dict[str, Any]] = {}
    entries = list((handle.get("status") or {}).get("resources") or []) + \
        list((handle.get("spec") or {}).get("resources") or [])
    for entry in entries:
        ref = entry.get("reference") if isinstance(entry, dict) else None
        if ref and ref.get("name") and ref.get("kind") and ref.get("apiVersion"):
            found.setdefault((ref["apiVersion"], ref["kind"], ref.get("namespace"), ref["name"]), ref)
    return list(found.values())


def _delete_resource(ctx: Context, handle: dict[str, Any], ref: dict[str, Any]) -> bool:
    """Delete the resource at ``ref`` when it is this handle's (:mod:`poolboy.domain.ownership`); 404 is fine.

    ``D/resource-handle-deleted`` is annotated first (so its events are ignored). Both writes carry the uid that was
    read: an object recreated under the same name by someone else in between is another object, never removed.
    Returns whether this call deleted an existing resource, so a cleanup that is repeated (its finalizer removal
    conflicted) does not emit its ``ResourceDeleted`` Events twice."""
    try:
        live = ctx.kube.get_or_none(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"))
        if live is None:
            return False
        if not ownership.may_manage(ctx.settings.domain, handle, live):
            log.warning("handle %s: leaving %s alone: %s", handle["metadata"]["name"], ownership.describe(live),
                        ownership.conflict_message(handle, live))
            return False
        uid = live["metadata"]["uid"]
        ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/uid", "value": uid}]
        if not live["metadata"].get("annotations"):
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        ops.append({"op": "add", "path": "/metadata/annotations/"
                    + jsonpatch.escape_pointer(ctx.label("resource-handle-deleted")),
                    "value": timeutil.format_timestamp(ctx.now)})
        try:
            ctx.kube.patch_json(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"), ops)
        except kube.Invalid as error:  # another object now (its uid test failed), or one no patch passes
            log.debug("handle %s: not annotating %s before its delete: %s", handle["metadata"]["name"],
                      ownership.describe(live), error)
        return ctx.kube.delete_if_exists(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"), uid=uid)
    except (kube.NotFound, kube.ApiMissing):
        return False
    except kube.Conflict:
        return False  # another object now has the name (the uid precondition failed): not ours to delete


def _delete_bound_claim(ctx: Context, handle: dict[str, Any]) -> None:
    ref = (handle.get("spec") or {}).get("resourceClaim")
    if not ref:
        return
    claim = ctx.kube.get_or_none(ref.get("apiVersion") or ctx.settings.api_version, RESOURCE_CLAIM, ref["name"],
                                 ref["namespace"])
    if claim is None or claim["metadata"].get("deletionTimestamp") or not binding.bound_to(ctx, handle, claim):
        return  # gone, going, or a claim recreated under the same name (another object: never ours to delete)
    if is_ignored(ctx, claim):
        # Poolboy writes nothing to an ignored object, deletion included (docs/behaviour.md#triggers-and-finalizers)
        return
    status_handle = (claim.get("status") or {}).get("resourceHandle") or {}
    if status_handle.get("detached"):
        return
    if status_handle.get("name") and status_handle["name"] != handle["metadata"]["name"]:
        return  # a recreated claim with its own handle
    ctx.kube.delete_if_exists(claim["apiVersion"], RESOURCE_CLAIM, ref["name"], ref["namespace"],
                              uid=claim["metadata"].get("uid"),
                              resource_version=claim["metadata"].get("resourceVersion"))


def cleanup(ctx: Context, handle: dict[str, Any]) -> preamble.Cleaned:
    """docs/behaviour.md#deletion: resources, then the bound claim (unless detached); the preamble then removes the
    finalizer. The pool and the claim look again."""
    for ref in _references(handle):
        if _delete_resource(ctx, handle, ref):
            ctx.events.emit(handle, "ResourceDeleted", f"Deleted {describe_reference(ref)}")
    _delete_bound_claim(ctx, handle)
    return preamble.Cleaned(Result(wake=unique_keys(pool_key(ctx, handle), claim_key(handle))))


def _delete_handle(ctx: Context, handle: dict[str, Any], reason: str, message: str) -> Result:
    metadata = handle["metadata"]
    ctx.events.emit(handle, reason, message)
    ctx.kube.delete_if_exists(handle["apiVersion"], RESOURCE_HANDLE, metadata["name"], metadata["namespace"],
                              uid=metadata.get("uid"), resource_version=metadata.get("resourceVersion"))
    return Result(wake=unique_keys(keys.make(keys.HANDLE, metadata["namespace"], metadata["name"]),
                                pool_key(ctx, handle), claim_key(handle)))


def _claim_expired_event(ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None, end: str) -> None:
    """The user sees the claim, not the handle: tell it why it is about to be deleted (before the cascade).

    Only a claim that this handle's deletion will delete gets it: live, not detached, and bound to this handle."""
    if claim is None or claim["metadata"].get("deletionTimestamp"):
        return
    recorded = (claim.get("status") or {}).get("resourceHandle") or {}
    if recorded.get("detached") or (recorded.get("name") and recorded["name"] != handle["metadata"]["name"]):
        return
    ctx.events.emit(claim, "Expired", f"Lifespan end {end} has passed; deleting ResourceHandle "
                                          f"{handle['metadata']['name']} and this claim.")


def expiry(ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None) -> Result | None:
    spec = handle.get("spec") or {}
    end = (spec.get("lifespan") or {}).get("end")
    if end:
        try:
            if timeutil.parse_timestamp(end) <= ctx.now:
                _claim_expired_event(ctx, handle, claim, end)
                return _delete_handle(ctx, handle, "Expired", f"Lifespan end {end} has passed.")
        except ValueError:
            log.warning("handle %s: unparsable lifespan end %r", handle["metadata"]["name"], end)
    if spec.get("resourceClaim") and claim is None:
        return _delete_handle(ctx, handle, "ClaimDeleted", "The bound ResourceClaim no longer exists.")
    other = _claims_handle(claim)
    if other and other != handle["metadata"]["name"] and standby.resume_timed_out(handle, ctx.now):
        return replaced(ctx, handle, other)
    if other and other != handle["metadata"]["name"]:
        ref = spec["resourceClaim"]
        return _delete_handle(ctx, handle, "DuplicateBinding",
                              f"ResourceClaim {ref['namespace']}/{ref['name']} is bound to ResourceHandle {other}; "
                              f"a claim has one handle, so this one, bound to it as well, is deleted.")
    return None


def replaced(ctx: Context, handle: dict[str, Any], other: str) -> Result:
    """A handle that did not resume in time, once its claim records the handle that replaces it: deleted (its
    cleanup leaves the claim alone, which records another handle)."""
    pool = ((handle.get("spec") or {}).get("resourcePool") or {}).get("name")
    deadline = ((handle.get("status") or {}).get("resuming") or {}).get("deadline")
    observe_handle_transition(pool or "", "Replaced")
    return _delete_handle(ctx, handle, "ResumeTimeout", f"Did not resume by its deadline {deadline}; "
                                                        f"ResourceHandle {other} serves the claim instead.")


def _claims_handle(claim: dict[str, Any] | None) -> str | None:
    """The handle a live, attached claim records (a claim never changes it once recorded), else None."""
    if claim is None or claim["metadata"].get("deletionTimestamp"):
        return None
    recorded = (claim.get("status") or {}).get("resourceHandle") or {}
    return None if recorded.get("detached") else recorded.get("name")


def requeue_at(handle: dict[str, Any]) -> datetime | None:
    end = ((handle.get("spec") or {}).get("lifespan") or {}).get("end")
    try:
        return timeutil.parse_timestamp(end) if end else None
    except ValueError:
        return None


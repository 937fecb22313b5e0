"""Managed resources of a handle: naming, Poolboy annotations, reference stickiness, create / filtered update
(docs/behaviour.md#handles).

Updates go through ``updateFilters``: the JSON-patch diff from the live object to the desired definition is
filtered op by op, so Poolboy never reverts fields that others own unless the provider allows it. Poolboy's own
``D/resource-*`` annotations are always allowed, which keeps ownership metadata correct.

The API server stores a definition with defaults added and values normalised; ops that only undo or redo that
are left out (:mod:`poolboy.domain.server_defaults`), or a converged resource would be patched for ever.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from poolboy import kube
from poolboy.domain import ownership, server_defaults
from poolboy.result import PermanentError
from poolboy.utils import jsonpatch

if TYPE_CHECKING:
    from poolboy.context import Context

log = logging.getLogger(__name__)


def handle_guid(handle: Mapping[str, Any]) -> str:
    """Handle name minus its ``generateName`` prefix, else minus ``guid-``, else its last 5 characters."""
    metadata = handle["metadata"]
    name: str = metadata["name"]
    prefix = metadata.get("generateName")
    if prefix and name.startswith(prefix) and len(name) > len(prefix):
        return name[len(prefix):]
    if name.startswith("guid-") and len(name) > 5:
        return name[5:]
    return name[-5:]


def apply_name(definition: dict[str, Any], index: int, guid: str) -> None:
    """A name from the template/override is kept; else ``generateName`` (default ``guid<index>-``) + guid."""
    metadata = definition.setdefault("metadata", {})
    if metadata.get("name"):
        return
    prefix = metadata.pop("generateName", None) or f"guid{index}-"
    metadata["name"] = prefix + guid


def name_is_reproducible(definition: Mapping[str, Any], guid: str) -> bool:
    """Whether a later run renders this resource under the same name, so that the reference need not be recorded
    before the resource is created: the name carries the handle's guid (the default name does, and providers name
    resources ``<prefix>-{{ guid }}`` by convention). A run that dies between the create and its status write is then
    followed by one whose create meets a 409 and adopts the resource (:func:`create_or_update`); any other name (say,
    from the claim's name or a random filter) is recorded first, or a crash there would orphan the resource."""
    name = (definition.get("metadata") or {}).get("name") or ""
    return bool(guid) and guid in name


def reference_of(definition: Mapping[str, Any]) -> dict[str, str]:
    metadata = definition.get("metadata") or {}
    reference = {"apiVersion": definition["apiVersion"], "kind": definition["kind"], "name": metadata["name"]}
    if metadata.get("namespace"):
        reference["namespace"] = metadata["namespace"]
    return reference


def enforce_reference(definition: dict[str, Any], reference: Mapping[str, Any] | None, index: int) -> None:
    """Stickiness: a recorded reference fixes name and namespace; a changed apiVersion/kind is refused."""
    if not reference:
        return
    old = f"{reference.get('apiVersion')} {reference.get('kind')}"
    new = f"{definition.get('apiVersion')} {definition.get('kind')}"
    if old != new:
        raise PermanentError("ReferenceChange", f"Resource {index} reference would change from {old} "
                             f"{reference.get('name')} to {new}")
    metadata = definition.setdefault("metadata", {})
    metadata["name"] = reference["name"]
    if reference.get("namespace"):
        metadata["namespace"] = reference["namespace"]
    else:
        metadata.pop("namespace", None)


def poolboy_annotations(ctx: Context, handle: Mapping[str, Any], provider_name: str, index: int,
                        requester_annotations: Mapping[str, str]) -> dict[str, str]:
    """The ``D/resource-*`` annotations every managed resource carries (docs/behaviour.md#handles)."""
    metadata = handle["metadata"]
    spec = handle.get("spec") or {}
    result = {
        ctx.label("resource-provider-name"): provider_name,
        ctx.label("resource-provider-namespace"): ctx.settings.operator_namespace,
        ctx.label("resource-handle-name"): metadata["name"],
        ctx.label("resource-handle-namespace"): metadata["namespace"],
        ctx.label("resource-handle-uid"): metadata["uid"],
        ctx.label("resource-index"): str(index),
    }
    claim = spec.get("resourceClaim")
    if claim:
        result[ctx.label("resource-claim-name")] = claim["name"]
        result[ctx.label("resource-claim-namespace")] = claim["namespace"]
    pool = spec.get("resourcePool")
    if pool:
        result[ctx.label("resource-pool-name")] = pool["name"]
        result[ctx.label("resource-pool-namespace")] = pool.get("namespace") or metadata["namespace"]
    result.update(requester_annotations)
    return result


def apply_metadata(definition: dict[str, Any], annotations: Mapping[str, str], handle: Mapping[str, Any]) -> None:
    spec = handle.get("spec") or {}
    metadata = definition.setdefault("metadata", {})
    merged = dict(metadata.get("annotations") or {})
    merged.update(annotations)
    merged.update(spec.get("resourceAnnotations") or {})
    metadata["annotations"] = merged
    if spec.get("resourceLabels"):
        metadata["labels"] = {**(metadata.get("labels") or {}), **spec["resourceLabels"]}


def always_allowed_pattern(domain: str) -> str:
    """``^/metadata/annotations/D~1resource-.*$`` with D regex-escaped."""
    return "^/metadata/annotations/" + re.escape(jsonpatch.escape_pointer(domain + "/resource-")) + ".*$"


def check_api(ctx: Context, api_version: str, kind: str) -> None:
    """Discovery of any kind; a missing API is a permanent error that names the real group/version."""
    try:
        ctx.mapper.resource_info(api_version, kind)
    except kube.ApiMissing as error:
        raise PermanentError("ApiMissing", f"API {api_version} (kind {kind}) is not available: {error.message}") \
            from error


def update_ops(live: Mapping[str, Any], desired: Mapping[str, Any], update_filters: list[dict[str, Any]],
               domain: str) -> list[dict[str, Any]]:
    """Filtered JSON-patch ops from live to desired (empty when nothing may change)."""
    live_metadata = live.get("metadata") or {}
    base = copy.deepcopy(dict(live))
    base.setdefault("metadata", {}).setdefault("annotations", {})
    try:
        ops = jsonpatch.filter_ops(jsonpatch.diff(base, dict(desired)), update_filters,
                                   always_allowed=[always_allowed_pattern(domain)])
    except ValueError as error:
        raise PermanentError("InvalidUpdateFilter", f"updateFilters: {error}") from error
    if ops and "annotations" not in live_metadata and any(op["path"].startswith("/metadata/annotations/")
                                                          for op in ops):
        ops.insert(0, {"op": "add", "path": "/metadata/annotations", "value": {}})
    return ops


def create_or_update(ctx: Context, desired: dict[str, Any], update_filters: list[dict[str, Any]],
                     live: dict[str, Any] | None, handle: Mapping[str, Any],
                     on_created: Callable[[dict[str, Any]], None] | None = None,
                     before_write: Callable[[], None] | None = None) -> dict[str, Any]:
    """Create the resource if absent (409 = exists → update), else patch what the filters allow; returns live.

    An existing object is patched only when ``handle`` may manage it (:mod:`poolboy.domain.ownership`); any other is
    a ``ResourceConflict`` and stays untouched. ``on_created`` is called with the new object only when this call
    really created it (not on a 409 adoption), so the caller can emit a ``ResourceCreated`` Event exactly once, on
    the transition. ``before_write`` is called before each create or patch is sent, never when nothing is written.
    """
    metadata = desired["metadata"]
    for _ in range(5):
        if live is not None and not ownership.may_manage(ctx.settings.domain, handle, live):
            raise PermanentError(ownership.CONFLICT, ownership.conflict_message(handle, live))
        if live is None:
            if before_write is not None:
                before_write()
            try:
                created = ctx.kube.create(desired, strict=True)  # a field the server does not know is an error
            except kube.AlreadyExists:
                live = ctx.kube.get_or_none(desired["apiVersion"], desired["kind"], metadata["name"],
                                            metadata.get("namespace"))
                continue
            except (kube.Invalid, kube.BadRequest) as error:
                raise rejected(desired, "create", error) from error
            if on_created is not None:
                on_created(created)
            return created
        ops = update_ops(live, desired, update_filters, ctx.settings.domain)
        if ops:
            ops = server_defaults.effective_ops(ctx, desired, live, ops)
        if not ops:
            return live
        precondition = {"op": "test", "path": "/metadata/resourceVersion",
                        "value": live["metadata"]["resourceVersion"]}
        if before_write is not None:
            before_write()
        try:
            return ctx.kube.patch_json(desired["apiVersion"], desired["kind"], metadata["name"],
                                       metadata.get("namespace"), [precondition, *ops], strict=True)
        except kube.BadRequest as error:
            raise rejected(desired, "update", error) from error
        except (kube.Invalid, kube.Conflict, kube.NotFound) as error:
            log.debug("update of %s/%s raced (%s); re-reading", desired["kind"], metadata["name"], error)
            tested = live["metadata"]["resourceVersion"]
            live = ctx.kube.get_or_none(desired["apiVersion"], desired["kind"], metadata["name"],
                                        metadata.get("namespace"))
            if isinstance(error, kube.Invalid) and live is not None and live["metadata"]["resourceVersion"] == tested:
                raise rejected(desired, "update", error) from error  # not a race: the patch itself is invalid
    raise kube.Conflict(409, "Conflict", f"{desired['kind']} {metadata['name']} kept changing during update")


def rejected(desired: Mapping[str, Any], verb: str, error: kube.ApiError) -> PermanentError:
    """The API server refused the definition itself (a field it does not know, a duplicate list key, a value out
    of range): the provider's or the claim's error to fix, reported with the server's own message."""
    metadata = desired.get("metadata") or {}
    where = f" in namespace {metadata['namespace']}" if metadata.get("namespace") else ""
    return PermanentError("ResourceRejected", f"The API server refused to {verb} {desired.get('kind')} "
                                              f"{metadata.get('name') or metadata.get('generateName')}{where}: "
                                              f"{error.message}")


def read_live(ctx: Context, reference: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not reference or not reference.get("name"):
        return None
    try:
        return ctx.kube.get_or_none(reference["apiVersion"], reference["kind"], reference["name"],
                                    reference.get("namespace"))
    except kube.ApiMissing:
        return None

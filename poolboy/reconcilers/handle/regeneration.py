"""Provider mode (docs/behaviour.md#handles): a handle's ``spec.resources`` follow its provider's resource list for
its parameter values; a resource never changes provider."""

from __future__ import annotations

import copy
import logging
from typing import Any

from poolboy.context import Context
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers.handle.handle_run import Providers

log = logging.getLogger(__name__)


def _merge_generated(ctx: Context, handle: dict[str, Any], existing: list[dict[str, Any]],
                     generated: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = [copy.deepcopy(r) for r in existing]
    for index, entry in enumerate(generated):
        if index >= len(result):
            result.append(copy.deepcopy(entry))
            continue
        current = result[index]
        old_provider = (current.get("provider") or {}).get("name")
        if old_provider and old_provider != entry["provider"]["name"]:
            log.warning("handle %s resource %d: refusing provider change %s -> %s", handle["metadata"]["name"],
                        index, old_provider, entry["provider"]["name"])
            continue
        current.setdefault("provider", entry["provider"])
        if "template" in entry:
            current["template"] = copy.deepcopy(entry["template"])
        if not current.get("name") and entry.get("name"):
            current["name"] = entry["name"]
    return result


def regenerate(ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None,
                providers: Providers) -> dict[str, Any]:
    """Provider mode: ``spec.resources`` follow the provider's resource list for the handle's parameters."""
    spec = handle.get("spec") or {}
    provider_spec = spec.get("provider")
    if not provider_spec:
        return handle
    provider = providers(provider_spec["name"])
    values = provider_spec.get("parameterValues") or {}
    effective = provider.effective_parameter_values(values, resource_claim=claim, resource_handle=handle)
    generated = provider.resource_list(ctx, effective, resource_claim=claim, resource_handle=handle)
    existing = spec.get("resources") or []
    resources = _merge_generated(ctx, handle, existing, generated)
    patch: dict[str, Any] = {}
    if resources != existing:
        patch["resources"] = resources
    if effective != values:  # persist rendered defaults so random defaults stay stable
        patch["provider"] = {"parameterValues": effective}
    if not patch:
        return handle
    metadata = handle["metadata"]
    return ctx.kube.patch_merge(handle["apiVersion"], RESOURCE_HANDLE, metadata["name"], metadata["namespace"],
                                {"spec": patch}, resource_version=metadata["resourceVersion"])


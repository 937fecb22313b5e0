"""A handle's status (docs/behaviour.md#handles, #health): ``status.resources`` shaped like ``spec.resources``, the
``Synced``/``Ready``/``Healthy`` conditions, and the one write of it."""

from __future__ import annotations

import copy
from typing import Any

from poolboy.context import Context
from poolboy.domain import conditions
from poolboy.result import PermanentError


def write_status(ctx: Context, handle: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Replace the status with an rv precondition, only when it changed; returns the current handle."""
    if status == (handle.get("status") or {}):
        return handle
    return ctx.kube.replace_status({**handle, "status": status})  # only serialised: a new top level is copy enough


def status_resources(handle: dict[str, Any]) -> list[dict[str, Any]]:
    """``status.resources`` shaped like ``spec.resources`` (length and names), keeping what is recorded; an entry
    with nothing recorded takes the reference an administrator wrote into ``spec.resources[i].reference``."""
    spec_resources = (handle.get("spec") or {}).get("resources") or []
    old = (handle.get("status") or {}).get("resources") or []
    result = []
    for index, resource in enumerate(spec_resources):
        entry = copy.deepcopy(old[index]) if index < len(old) and isinstance(old[index], dict) else {}
        if not entry.get("reference") and isinstance(resource.get("reference"), dict) and \
                resource["reference"].get("name"):
            entry["reference"] = copy.deepcopy(resource["reference"])  # an administrator's explicit reference
        if resource.get("name"):
            entry["name"] = resource["name"]
        else:
            entry.pop("name", None)
        result.append(entry)
    return result


def set_conditions(ctx: Context, status: dict[str, Any], handle: dict[str, Any],
                    error: PermanentError | None) -> None:
    generation = handle["metadata"].get("generation")
    current = status.get("conditions")
    if error is not None:
        current = conditions.set_condition(current, "Synced", False, error.reason, error.message, ctx.now, generation)
    else:
        current = conditions.set_condition(current, "Synced", True, "Synced", "Resources are in sync.", ctx.now,
                                           generation)
        ready = status.get("ready")
        current = conditions.set_condition(
            current, "Ready", ready, {True: "ResourcesReady", False: "NotReady", None: "Unknown"}[ready],
            {True: "All resources are ready.", False: "Some resources are not ready.",
             None: "Readiness is not known."}[ready], ctx.now, generation)
        healthy = status.get("healthy")
        current = conditions.set_condition(
            current, "Healthy", healthy, {True: "ResourcesHealthy", False: "Unhealthy", None: "Unknown"}[healthy],
            {True: "All resources are healthy.", False: "Some resources are unhealthy.",
             None: "Health is not known."}[healthy], ctx.now, generation)
    status["conditions"] = current


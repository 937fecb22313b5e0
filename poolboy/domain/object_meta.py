"""Metadata rules shared by every Poolboy kind: the ignore label and the finalizer
(docs/behaviour.md#triggers-and-finalizers).

Legacy upstream finalizers ``D/handler`` and ``D/handler-<N>`` are treated as ours: cleanup runs, then they are
removed; they are never added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from poolboy.context import Context


def is_ignored(ctx: Context, obj: dict[str, Any] | None) -> bool:
    return bool(obj) and ctx.label("ignore") in (((obj or {}).get("metadata") or {}).get("labels") or {})


def our_finalizers(ctx: Context, obj: dict[str, Any]) -> list[str]:
    """``D`` plus the legacy ``D/handler`` and ``D/handler-<N>`` finalizers, which are treated as ours."""
    domain = ctx.settings.finalizer
    return [f for f in (obj["metadata"].get("finalizers") or [])
            if f == domain or f == f"{domain}/handler" or f.startswith(f"{domain}/handler-")]


def remove_finalizers(ctx: Context, obj: dict[str, Any]) -> None:
    ours = set(our_finalizers(ctx, obj))
    if not ours:
        return
    metadata = obj["metadata"]
    remaining = [f for f in metadata.get("finalizers") or [] if f not in ours]
    ctx.kube.patch_merge(obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace"),
                         {"metadata": {"finalizers": remaining}},
                         resource_version=metadata["resourceVersion"])


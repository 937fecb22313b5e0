"""The start every reconciler shares (controller-runtime's reconcile contract, Kopf's handler preamble).

Read the object through the reader (the shared cache, the API on a miss); gone or labelled ``D/ignore`` → done;
being deleted → the kind's cleanup (or done); otherwise make sure the finalizer is on and converge the live object.
A Conflict anywhere re-runs the whole reconcile from fresh reads (:func:`poolboy.kube.retry_on_conflict`): after a
failed precondition the reader reads from the API, so a stale cache costs one retry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from poolboy import kube
from poolboy.context import Context
from poolboy.domain.object_meta import ensure_finalizer, is_ignored
from poolboy.result import Result

Step = Callable[[Context, dict[str, Any]], Result]


def reconcile_object(ctx: Context, kind: str, namespace: str, name: str, *, live: Step,
                     deleting: Step | None = None, finalizer: bool = True) -> Result:
    """Run ``live(ctx, obj)`` (or ``deleting(ctx, obj)``) on the current object; see the module docstring.

    ``finalizer=False`` leaves the finalizer to ``live`` (a claim stages it into its one metadata write) or to
    nobody (kinds Poolboy does not finalize)."""

    def once() -> Result:
        obj = ctx.kube.get_or_none(ctx.settings.api_version, kind, name, namespace)
        if obj is None or is_ignored(ctx, obj):
            return Result()
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return deleting(ctx, obj) if deleting is not None else Result()
        if finalizer:
            obj = ensure_finalizer(ctx, obj)
        return live(ctx, obj)

    return kube.retry_on_conflict(once)

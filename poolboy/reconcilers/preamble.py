"""The start every reconciler shares (controller-runtime's reconcile contract, Kopf's handler preamble), and the
one owner of Poolboy's finalizer.

A kind declares its reconciler here (:class:`ObjectReconciler`: its kind, the step that converges a live object, the
cleanup of a deleted one, how its finalizer is added), and the registry hands that declaration to the engine, so a
run goes engine → preamble → the kind's step. Read the object through the reader (the shared cache, the API on a
miss); gone or labelled ``D/ignore`` → done; being deleted → the kind's cleanup, then the finalizer removed;
otherwise make sure the finalizer is on and converge the live object. A Conflict anywhere re-runs the whole
reconcile from fresh reads (:func:`poolboy.kube.conflict_policy`, client-go's retry-on-conflict): after a failed
precondition the reader reads from the API, so a stale cache costs one retry.

The finalizer rule is here and nowhere else: added before anything is converged (so that no object Poolboy acted
on can vanish before its cleanup ran), cleanup run only while one of our finalizers is on (:func:`our_finalizers`
is the guard: a cleanup already finished is not repeated), and removed once the cleanup is done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from poolboy import kube
from poolboy.context import Context
from poolboy.domain.object_meta import is_ignored, our_finalizers, remove_finalizers
from poolboy.result import Result

Step = Callable[[Context, dict[str, Any]], Result]


@dataclass(frozen=True)
class Cleaned:
    """A cleanup's outcome: its Result, and an Event (reason, message) to emit on the object once the finalizer
    is gone — only then, so that a cleanup re-run after a Conflict on the finalizer removal does not repeat it."""

    result: Result
    event: tuple[str, str] | None = None


Cleanup = Callable[[Context, dict[str, Any]], Cleaned]


class Finalizer(Enum):
    """How the finalizer gets onto a live object."""

    WRITE = "write"  # the preamble writes it before ``live`` runs
    STAGED = "staged"  # ``live`` stages :func:`finalizer_patch` into its own first metadata write (one write less)
    NONE = "none"  # kinds Poolboy does not finalize (a scaling goes with its pool)


@dataclass(frozen=True)
class ObjectReconciler:
    """One kind's reconciler, declared: ``reconcile = ObjectReconciler(KIND, live=_live, deleting=_cleanup)`` is the
    ``reconcile(ctx, namespace, name) -> Result`` the registry hands the engine; see the module docstring.

    Why a declaration rather than a function that calls the preamble: a run then goes down the layers once — the
    engine calls the preamble, the preamble the kind's step — instead of entering the kind, leaving it for the
    preamble and coming back through a callback.
    """

    kind: str
    #: converge the live object (the finalizer on, unless ``finalizer`` says the step stages it itself)
    live: Step
    #: clean up an object being deleted, before its finalizer goes; None: nothing to clean up
    deleting: Cleanup | None = None
    finalizer: Finalizer = Finalizer.WRITE

    def __call__(self, ctx: Context, namespace: str, name: str) -> Result:
        return kube.conflict_policy()(self._once, ctx, namespace, name)

    def _once(self, ctx: Context, namespace: str, name: str) -> Result:
        obj = ctx.kube.get_or_none(ctx.settings.api_version, self.kind, name, namespace)
        if obj is None or is_ignored(ctx, obj):
            return Result()
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return _finalize(ctx, obj, self.deleting) if self.deleting is not None else Result()
        if self.finalizer is Finalizer.WRITE:
            obj = _ensure_finalizer(ctx, obj)
        return self.live(ctx, obj)


def finalizer_patch(ctx: Context, obj: dict[str, Any]) -> dict[str, Any]:
    """The merge patch that adds our finalizer (empty when it is on): for a ``Finalizer.STAGED`` kind to write."""
    finalizers = obj["metadata"].get("finalizers") or []
    if ctx.settings.finalizer in finalizers:
        return {}
    return {"metadata": {"finalizers": [*finalizers, ctx.settings.finalizer]}}


def _ensure_finalizer(ctx: Context, obj: dict[str, Any]) -> dict[str, Any]:
    patch = finalizer_patch(ctx, obj)
    if not patch:
        return obj
    metadata = obj["metadata"]
    return ctx.kube.patch_merge(obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace"), patch,
                                resource_version=metadata["resourceVersion"])


def _finalize(ctx: Context, obj: dict[str, Any], cleanup: Cleanup) -> Result:
    """Clean up while one of our finalizers is on, then remove them; an object already gone is done."""
    if not our_finalizers(ctx, obj):
        return Result()
    cleaned = cleanup(ctx, obj)
    try:
        remove_finalizers(ctx, obj)
    except kube.NotFound:
        return cleaned.result
    if cleaned.event is not None:
        ctx.events.emit(obj, *cleaned.event)
    return cleaned.result

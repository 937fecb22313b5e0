"""One reconcile of a live claim: the claim as last written, the status it should get, and what to do after.

Every step of the claim reconciler works on this one object. It keeps the writes back until the end so that a
run writes the claim at most twice — one merge patch of metadata/spec with the read resourceVersion as
precondition, then the status only when it changed — and emits its Events only after those writes succeeded: a
run retried after a Conflict therefore repeats neither a write nor an Event.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

import orjson

from poolboy import kube
from poolboy.context import Context
from poolboy.domain import binding, claim_status
from poolboy.domain import conditions as cond
from poolboy.domain.provider import Provider, clock_rerun
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE
from poolboy.result import PermanentError, Result
from poolboy.utils.merge import combine_merge_patches, merge_patch

#: the largest object the API server stores (etcd's default request limit, 1.5 MiB), less room for the request
MAX_OBJECT_BYTES = 1_500_000


def too_large(claim: dict[str, Any], status: dict[str, Any]) -> bool:
    """Whether the claim with ``status`` is past what the API server stores, by its JSON size."""
    if not any("state" in resource for resource in status.get("resources") or []):
        return False
    return len(orjson.dumps({**claim, "status": status})) > MAX_OBJECT_BYTES


def is_too_large(error: kube.ApiError) -> bool:
    """The API server's refusal of an object too large to store (413, or etcd's limit passed on)."""
    return error.status == 413 or "too large" in error.message.lower()


class ClaimRun:
    """The staged claim write, the desired status, and the Events and keys to hand on once it is written."""

    def __init__(self, ctx: Context, claim: dict[str, Any]) -> None:
        self.ctx = ctx
        self.claim = claim
        self.status: dict[str, Any] = copy.deepcopy(claim.get("status") or {})
        self.events: list[tuple[str, str, str, str | None]] = []
        self.handle_events: list[tuple[dict[str, Any], str, str]] = []  # (handle, reason, message)
        self.wake: list[str] = []
        self.hold: list[str] = []  # keys to run soon, batched (the pool of a bound handle)
        self.requeue: list[datetime] = []
        self.bound_now = False  # bound or created in this run: no LifespanChange event for the initial end
        self._recorded_handle: tuple[str, dict[str, Any] | None] | None = None  # (name, handle) read this run
        self.staged: dict[str, Any] = {}  # metadata/spec changes not yet written (one merge patch per run)
        self.decided: set[str] = set()  # condition types this run set: stamped with the written generation
        self.read_version: str = claim["metadata"]["resourceVersion"]  # precondition of that patch
        #: an earlier run got as far as the finalizer, which goes on before any bind: it may have bound a handle and
        #: lost the answer, so whether one is bound is asked of the API server, not of a cache that may lag
        self.may_have_bound = ctx.settings.finalizer in (claim["metadata"].get("finalizers") or []) and \
            not (claim.get("status") or {}).get("resourceHandle")

    @property
    def meta(self) -> dict[str, Any]:
        metadata: dict[str, Any] = self.claim["metadata"]
        return metadata

    @property
    def spec(self) -> dict[str, Any]:
        return self.claim.get("spec") or {}

    def claim_with_status(self) -> dict[str, Any]:
        """The claim as it will read once this run's status is written (for templates and lifespan bounds)."""
        return {**self.claim, "status": self.status}

    def condition(self, type_: str, status: bool | None, reason: str, message: str) -> None:
        """Set one condition; the list stays in the claim's order
        (:data:`~poolboy.domain.claim_status.CONDITION_ORDER`), which its printer columns rely on."""
        conditions = cond.set_condition(self.status.get("conditions"), type_, status, reason, message, self.ctx.now,
                                        self.meta.get("generation"), stored=self.stored_conditions())
        self.status["conditions"] = cond.ordered(conditions, claim_status.CONDITION_ORDER)
        self.decided.add(type_)

    def stored_conditions(self) -> list[dict[str, Any]]:
        """The conditions the claim carries as read (or as last written by this run), before this run's changes."""
        return (self.claim.get("status") or {}).get("conditions") or []

    def not_bound(self, message: str = "No ResourceHandle is bound to the claim.") -> None:
        """Ready False and Healthy Unknown, reason ``NotBound``: what a claim without a live handle is."""
        self.condition("Ready", False, claim_status.NOT_BOUND, message)
        self.condition("Healthy", None, claim_status.NOT_BOUND, message)

    def event(self, reason: str, message: str, type_: str = "Normal", action: str | None = None) -> None:
        self.events.append((reason, message, type_, action))

    def synced_warning(self, synced: bool, reason: str, message: str) -> None:
        """Synced with reason and message, and a Warning Event only when that first appears or changes."""
        previous = cond.get_condition(self.stored_conditions(), "Synced") or {}
        self.condition("Synced", synced, reason, message)
        wanted = (cond.TRUE if synced else cond.FALSE, reason, message)
        if (previous.get("status"), previous.get("reason"), previous.get("message")) != wanted:
            self.event(reason, message, "Warning")

    def synced_error(self, reason: str, message: str) -> None:
        """A user-fixable error: Synced=False, and a Warning Event when it first appears or changes."""
        self.synced_warning(False, reason, message)

    def known_handle(self) -> dict[str, Any] | None:
        """The recorded handle, read once per run (validation, parameters and binding all look at it)."""
        name = (self.status.get("resourceHandle") or {}).get("name")
        if not name:
            return None
        if self._recorded_handle is None or self._recorded_handle[0] != name:
            self._recorded_handle = (name, self.read_handle(name))
        return self._recorded_handle[1]

    def read_handle(self, name: str) -> dict[str, Any] | None:
        return self.ctx.kube.get_or_none(self.ctx.settings.api_version, RESOURCE_HANDLE, name,
                                         self.ctx.settings.operator_namespace)

    # -- the staged write --

    def patch_claim(self, patch: dict[str, Any]) -> None:
        """Stage a metadata/spec change: the run's copy shows it at once, the API gets every staged change of the
        run in ONE merge patch (:meth:`flush_claim`), before anything that depends on it is written elsewhere."""
        self.claim = merge_patch(self.claim, patch)
        self.staged = combine_merge_patches(self.staged, patch)

    def flush_claim(self) -> None:
        """Write the staged metadata/spec changes, with the resourceVersion the run read as precondition."""
        if not self.staged:
            return
        patch, self.staged = self.staged, {}
        self.claim = self.ctx.kube.patch_merge(self.ctx.settings.api_version, RESOURCE_CLAIM, self.meta["name"],
                                               self.meta["namespace"], patch, resource_version=self.read_version)
        self.read_version = self.meta["resourceVersion"]

    def intend(self, handle_name: str) -> None:
        """Name ``handle_name`` on the claim as the handle its runs bind or create, and write it with the run's other
        staged changes, before the bind or create (:data:`poolboy.domain.binding.BINDING_ANNOTATION`)."""
        key = self.ctx.label(binding.BINDING_ANNOTATION)
        if (self.meta.get("annotations") or {}).get(key) != handle_name:
            self.patch_claim({"metadata": {"annotations": {key: handle_name}}})
        self.flush_claim()

    def write_status(self) -> None:
        """Write the status only when it changed (a converged claim produces no write), then emit events.

        The run's own spec changes are written first; the conditions it decided describe the spec as written, so
        they carry the generation that write produced (:func:`poolboy.domain.conditions.observe`)."""
        self.flush_claim()
        generation = self.meta.get("generation")
        if self.decided and generation is not None:
            self.status["conditions"] = cond.observe(self.status.get("conditions"), self.decided, generation)
        if too_large(self.claim, self.status):
            self.omit_states(f"The claim's status would be over {MAX_OBJECT_BYTES} bytes, the API server's limit "
                             f"for one object")
        if self.status != (self.claim.get("status") or {}):
            try:
                self.replace_status()
            except kube.ApiError as error:
                if not is_too_large(error):
                    raise
                self.omit_states(error.message)
                self.replace_status()
        for reason, message, type_, action in self.events:
            self.ctx.events.emit(self.claim, reason, message, type=type_, action=action)
        self.events.clear()
        # The bind is observed here, not by the handle reconciler: its Event on the handle is emitted here too
        # (Events are not status, so this does not break single-writer status ownership).
        for handle, reason, message in self.handle_events:
            self.ctx.events.emit(handle, reason, message)
        self.handle_events.clear()

    def replace_status(self) -> None:
        # the body is only serialised: a new top level is copy enough (a deep copy of the claim was a per cent of a
        # worker's CPU)
        self.claim = self.ctx.kube.replace_status({**self.claim, "status": self.status})

    def omit_states(self, reason: str) -> None:
        """The managed resources' states left out of the status, which is too large with them: Synced=False says
        so (with a Warning Event once); everything else of the status stays."""
        for resource in self.status.get("resources") or []:
            resource.pop("state", None)
        self.synced_error("StatusTooLarge", f"{reason}; the managed resources' states are left out of "
                                            f"status.resources.")
        generation = self.meta.get("generation")
        if generation is not None:
            self.status["conditions"] = cond.observe(self.status.get("conditions"), {"Synced"}, generation)

    def fail(self, error: PermanentError) -> None:
        """Record a user-fixable error: Synced=False condition, status fields, an Event when the message changed;
        a claim it keeps from binding is not ready."""
        self.synced_error(error.reason, error.message)
        if not self.status.get("resourceHandle"):
            self.not_bound()
        self.write_status()
        error.recheck_after = self.ctx.settings.permanent_error_recheck

    def result(self, providers: list[Provider]) -> Result:
        """The run's outcome: the earliest future deadline (its own or the providers' clocks) and the keys to wake."""
        future = [t for t in (*self.requeue, clock_rerun(self.ctx, providers)) if t and t > self.ctx.now]
        return Result(requeue_at=min(future) if future else None, wake=tuple(dict.fromkeys(self.wake)),
                      hold=tuple(dict.fromkeys(self.hold)))

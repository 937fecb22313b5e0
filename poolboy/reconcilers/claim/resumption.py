"""Resuming the bind (or create) an earlier run of the claim chose and named on the claim
(:data:`poolboy.domain.binding.BINDING_ANNOTATION`), before choosing anew.

The named handle is read from the API server when the cache has it unbound or not at all, since its bind or creation
may be a moment old (a bind, and a deletion, are never undone: the cache is believed on those). Bound to this claim:
adopted. Unbound: bound (another run of the claim may be binding it too; the API server lets one win and the other
adopts). The claim's own handle, not created yet: created. Bound to another claim, deleting or gone: the claim chooses
another, and names it before binding it, so a run still going on with the old name cannot bind a second handle.
"""

from __future__ import annotations

from typing import Any

from poolboy.domain import binding, handle_factory
from poolboy.domain.binding import candidates as candidate_index
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers.claim.bind import bind_candidate, bound
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.creation import create_handle
from poolboy.reconcilers.claim.modes import Mode


def resume(run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The handle the claim names, bound, adopted or created; None when it names none or one that can no longer be
    this claim's."""
    name = binding.intended_handle(run.ctx, run.claim)
    if not name:
        return None
    settings = run.ctx.settings
    handle = run.read_handle(name)
    if handle is None or candidate_index.is_unbound(handle, settings.domain):  # the cache may not have the bind yet
        handle = run.ctx.api_reader.get_or_none(settings.api_version, RESOURCE_HANDLE, name,
                                                settings.operator_namespace)
    if handle is None:
        own = handle_factory.is_claims_own(run.meta["uid"], name)
        return create_handle(run, mode, claim_resources) if own else None
    if binding.is_deleting(handle):
        return None
    if binding.bound_to(run.ctx, handle, run.claim):
        bound(run, mode, handle, "Bound", f"Adopted ResourceHandle {name}")
        return handle
    if candidate_index.is_unbound(handle, settings.domain):
        return bind_candidate(run, mode, handle, claim_resources)
    return None

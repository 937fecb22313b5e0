"""The ends of a claim's life: deleted by the user, detached from its handle, or deleted/detached by its own
``autoDelete`` / ``autoDetach`` condition.

A deleted claim takes its handle with it unless it was detached (the handle then lives on alone) or its pool's
provider reuses handles (the handle is released, cleaned and returned to its pool); a detached
claim only waits for its lifespan end and then deletes itself.
"""

from __future__ import annotations

import logging
from typing import Any

from poolboy import keys
from poolboy.context import Context
from poolboy.domain import binding, claim_lifespan
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode, context_variables
from poolboy.reconcilers.handle import reuse as handle_reuse
from poolboy.result import Result
from poolboy.utils import templating, timeutil

log = logging.getLogger(__name__)


def delete_handles(ctx: Context, claim: dict[str, Any]) -> tuple[set[str], list[str], set[str]]:
    """A deleted claim's cleanup: delete its handles unless detached (404 fine), or release a reusable pool handle
    for cleaning; their names, the keys to wake and the names of those released.

    Besides the recorded handle, any handle labelled with the claim and bound to it goes too: a bind or create
    whose claim status write never happened must not outlive the claim."""
    metadata = claim["metadata"]
    handle_ref = (claim.get("status") or {}).get("resourceHandle") or {}
    if handle_ref.get("detached"):
        return set(), [], set()
    names = {handle_ref["name"]} if handle_ref.get("name") else set()
    selector = (f"{ctx.label('resource-claim-name')}={metadata['name']},"
                f"{ctx.label('resource-claim-namespace')}={metadata['namespace']}")
    for handle in ctx.kube.list(ctx.settings.api_version, RESOURCE_HANDLE, ctx.settings.operator_namespace,
                                label_selector=selector):
        if binding.bound_to(ctx, handle, claim):
            names.add(handle["metadata"]["name"])
    if not names:
        log.info("claim %s/%s deleted before binding", metadata["namespace"], metadata["name"])
    wake = []
    released = set()
    for handle_name in sorted(names):
        wake.append(keys.make(keys.HANDLE, ctx.settings.operator_namespace, handle_name))
        if handle_reuse.release_for_claim(ctx, claim, handle_name):
            released.add(handle_name)  # cleaned and returned to its pool instead (docs/pools.md, "Reuse")
            continue
        ctx.kube.delete_if_exists(ctx.settings.api_version, RESOURCE_HANDLE, handle_name,
                                  ctx.settings.operator_namespace)
    return names, wake, released


def detached(ctx: Context, claim: dict[str, Any]) -> Result:
    """A detached claim only expires: deleted once ``status.lifespan.end`` has passed."""
    end = claim_lifespan.parse_optional(((claim.get("status") or {}).get("lifespan") or {}).get("end"))
    if end is None:
        return Result()
    if end > ctx.now:
        return Result(requeue_at=end)
    metadata = claim["metadata"]
    ctx.events.emit(claim, "Expired", f"Detached claim lifespan ended at {timeutil.format_timestamp(end)}")
    ctx.kube.delete_if_exists(ctx.settings.api_version, RESOURCE_CLAIM, metadata["name"], metadata["namespace"])
    return Result()


def auto_delete_or_detach(run: ClaimRun, mode: Mode, handle: dict[str, Any]) -> bool:
    """Delete the claim (``autoDelete``) or detach it and delete its handle (``autoDetach``: a reusable pool handle
    is released for cleaning instead, as when the claim is deleted) when its condition holds; True when it did (the
    run is over)."""
    if _auto_condition(run, mode, "autoDelete", handle):
        run.event("AutoDelete", "autoDelete condition is true; deleting the claim")
        run.write_status()
        run.ctx.kube.delete_if_exists(run.ctx.settings.api_version, RESOURCE_CLAIM, run.meta["name"],
                                      run.meta["namespace"])
        return True
    if _auto_condition(run, mode, "autoDetach", handle):
        name = handle["metadata"]["name"]
        reusable = handle_reuse.reusable(run.ctx, handle)
        run.status["resourceHandle"]["detached"] = True
        run.condition("Bound", False, "Detached", f"Detached from ResourceHandle {name}.")
        run.event("Detached", f"autoDetach condition is true; "
                              f"{'releasing' if reusable else 'deleting'} ResourceHandle {name}")
        run.write_status()
        if not (reusable and handle_reuse.release_for_claim(run.ctx, run.claim, name)):
            run.ctx.kube.delete_if_exists(run.ctx.settings.api_version, RESOURCE_HANDLE, name,
                                          handle["metadata"]["namespace"])
        return True
    return False


def _auto_condition(run: ClaimRun, mode: Mode, key: str, handle: dict[str, Any]) -> bool:
    """``spec.<key>.when`` evaluated on the claim as it will be written; a failing template counts as false."""
    when = (run.spec.get(key) or {}).get("when")
    if not when:
        return False
    claim = run.claim_with_status()
    variables = {**context_variables(run, mode.context_provider, handle),
                 "resource_claim": templating.wrap_object(claim),
                 "metadata": claim.get("metadata"), "spec": claim.get("spec"), "status": run.status}
    try:
        return bool(templating.check(when, variables, mode.template_vars(handle)))
    except Exception as error:
        log.warning("claim %s/%s %s.when failed: %s", run.meta["namespace"], run.meta["name"], key, error)
        return False

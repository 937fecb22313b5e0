"""Released pool handles cleaned and returned to their pool (docs/pools.md, "Reuse"; the rules and the release write:
:mod:`poolboy.domain.reuse`).

Level-based, so a run may stop anywhere and the next one goes on from what the handle shows:

- bound, its claim gone, reusable: released (one write: unbound and labelled cleaning at once);
- labelled cleaning: ``status.state: Cleaning`` written; the cleanup patch applied once to every managed resource
  (``status.cleaning.patched``); once ``cleanedCheck`` holds for each, the handle is made fresh (one write that
  drops the label), else it waits (requeued for its deadline; its resources' watch events wake it sooner). Past the
  deadline, on a failing patch or an invalid ``spec.reuse`` it is deleted instead and its pool replaces it;
- unlabelled but still showing Cleaning: the fresh write is done, its status follows (``Running``) and the pool and
  the claims waiting for it are woken.

A handle whose lifespan end has passed is left to expiry, which deletes it: an expired handle is never reused.
"""

from __future__ import annotations

import copy
import logging
from datetime import datetime, timedelta
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import binding, conditions, handle_state, linked, pool_handles, reuse
from poolboy.domain.binding import scopes
from poolboy.domain.health import evaluate_check
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE, RESOURCE_POOL
from poolboy.observability import observe_handle_transition
from poolboy.reconcilers.handle.handle_run import HandleRun, Providers
from poolboy.reconcilers.handle.names import pool_key, unique_keys
from poolboy.reconcilers.handle.status import write_status
from poolboy.result import PermanentError, Result
from poolboy.utils import templating, timeutil
from poolboy.utils.merge import deep_merge

log = logging.getLogger(__name__)

#: how long a cleaning handle waits at most between two looks at its resources when no watch event wakes it
RECHECK = timedelta(seconds=30)


def live(ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None, providers: Providers) -> Result | None:
    """The handle's reuse step (see the module docstring); None when it has nothing to do with reuse now."""
    if _expired(handle, ctx.now):
        return None
    if reuse.is_released(handle, ctx.settings.domain):
        return _clean(ctx, handle, providers)
    if handle_state.is_cleaning(handle):
        return _returned(ctx, handle)
    if (handle.get("spec") or {}).get("resourceClaim") and claim is None and reusable(ctx, handle):
        handle = release(ctx, handle)
        return Result(requeue_at=ctx.now, wake=unique_keys(pool_key(ctx, handle)))  # its own writes wake it not
    return None


def show_running(status: dict[str, Any], handle: dict[str, Any], providers: Providers) -> None:
    """A pool handle whose provider reuses handles shows its state from the start (``Running`` while its resources
    run); any other handle's status stays as upstream Poolboy writes it. The provider is the run's own read."""
    name = reuse.reuse_provider(handle)
    if name and "state" not in status and providers(name).spec.get("reuse") is not None:
        status["state"] = handle_state.RUNNING


def reusable(ctx: Context, handle: dict[str, Any]) -> bool:
    """Whether the handle is released rather than deleted when its claim goes: a pool made it and its provider has
    ``spec.reuse`` (checked when it is cleaned: an invalid one deletes it then, with the reason)."""
    name = reuse.reuse_provider(handle)
    provider = Provider.get_or_none(ctx, name) if name else None
    return provider is not None and provider.spec.get("reuse") is not None


def release(ctx: Context, handle: dict[str, Any]) -> dict[str, Any]:
    """The release write (:func:`poolboy.domain.reuse.release_ops`); a handle changed since it was read is a
    conflict: the run starts over from fresh reads."""
    metadata = handle["metadata"]
    try:
        return ctx.kube.patch_json(handle["apiVersion"], RESOURCE_HANDLE, metadata["name"], metadata["namespace"],
                                   reuse.release_ops(handle, ctx.settings.domain, ctx.now))
    except kube.Invalid as error:
        raise kube.Conflict(409, "Conflict", f"handle {metadata['name']} changed before its release") from error


def release_for_claim(ctx: Context, claim: dict[str, Any], name: str) -> bool:
    """A deleted claim's handle ``name``: released when reusable; True when the claim must not delete it (released
    now, or earlier: then it may already serve another claim)."""
    handle = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_HANDLE, name, ctx.settings.operator_namespace)
    if handle is None or not reuse.reuse_provider(handle) or binding.is_deleting(handle):
        return False
    if reuse.is_released(handle, ctx.settings.domain):
        return True
    if not reusable(ctx, handle):
        return False  # deleted as always
    if binding.bound_to(ctx, handle, claim):
        release(ctx, handle)
    return True  # else released before, and maybe bound to another claim since: the handle's own run sees to it


def _clean(ctx: Context, handle: dict[str, Any], providers: Providers) -> Result:
    domain = ctx.settings.domain
    status = copy.deepcopy(handle.get("status") or {})
    since, claim = reuse.released(handle, domain)
    recorded = status.get("cleaning") or {}
    if since is None:  # labelled by hand: the first run's time, kept in status, starts the clock
        since = _timestamp(recorded.get("since")) or ctx.now
    try:
        spec = _reuse_spec(ctx, handle, providers)
    except (reuse.InvalidReuse, PermanentError) as error:
        return _invalid(ctx, handle, str(error))
    if spec is None:
        return _fail(ctx, handle, f"ResourceProvider {reuse.reuse_provider(handle)} no longer declares reuse.")
    entering = status.get("state") != handle_state.CLEANING
    status["state"] = handle_state.CLEANING
    status["cleaning"] = reuse.cleaning_status(since, spec, claim or recorded.get("claim") or {},
                                               bool(recorded.get("patched")))
    handle = write_status(ctx, handle, status)
    if entering:
        ctx.events.emit(handle, "Cleaning", _cleaning_message(claim, spec))
        observe_handle_transition(_pool(handle), handle_state.CLEANING)
    if ctx.now >= reuse.deadline(since, spec):
        return _fail(ctx, handle, f"Not clean within cleanupTimeout {timeutil.format_interval(spec.cleanup_timeout)}.")
    run = HandleRun(ctx, handle, None, providers)
    if not status["cleaning"]["patched"]:
        try:
            _apply_patch(run, spec)
        except reuse.InvalidReuse as error:
            return _invalid(ctx, run.handle, str(error))
        except kube.ApiError as error:
            return _fail(ctx, run.handle, f"The cleanup patch failed: {error}")
        status = copy.deepcopy(run.handle.get("status") or {})
        status["cleaning"]["patched"] = True
        run.handle = write_status(ctx, run.handle, status)
    if all(_clean_resource(run, spec, index) for index in range(len(run.states))):
        return _make_fresh(ctx, run.handle, providers)
    again = min(reuse.deadline(since, spec), ctx.now + RECHECK)
    return Result(requeue_at=again, wake=unique_keys(pool_key(ctx, run.handle) if entering else None))


def _reuse_spec(ctx: Context, handle: dict[str, Any], providers: Providers) -> reuse.Reuse | None:
    name = reuse.reuse_provider(handle)
    if not name:
        return None
    return reuse.parse(name, providers(name).spec.get("reuse"))


def _apply_patch(run: HandleRun, spec: reuse.Reuse) -> None:
    """The cleanup patch, rendered with the override's variables (no claim), merged into every managed resource
    that exists; the resource's uid is its precondition, so an object recreated under its name is left alone."""
    if not spec.cleanup_patch:
        return
    for index, state in enumerate(run.states):
        if state is None:
            continue
        resource = run.resources[index]
        provider = run.providers((resource.get("provider") or {}).get("name") or spec.provider)
        template_vars = provider.template_vars(run.handle)
        outcome = linked.evaluate_links(provider, index, run.resources, run.states, get_provider=run.providers,
                                        resource_claim=None, resource_handle=run.handle, template_vars=template_vars)
        variables = run.override_variables(index, provider, outcome.template_vars)
        try:
            patch = templating.render(copy.deepcopy(spec.cleanup_patch), variables, template_vars)
        except templating.TemplateError as error:
            raise reuse.InvalidReuse(f"ResourceProvider {spec.provider} spec.reuse.cleanupPatch failed to render: "
                                     f"{error}") from error
        if not isinstance(patch, dict):
            raise reuse.InvalidReuse(f"ResourceProvider {spec.provider} spec.reuse.cleanupPatch rendered no object")
        metadata = state["metadata"]
        patch = deep_merge(patch, {"metadata": {"uid": metadata["uid"]}})
        run.states[index] = run.ctx.kube.patch_merge(state["apiVersion"], state["kind"], metadata["name"],
                                                     metadata.get("namespace"), patch)


def _clean_resource(run: HandleRun, spec: reuse.Reuse, index: int) -> bool:
    """A resource is clean once ``cleanedCheck`` holds on its state (at once without one); one that does not exist
    has nothing to clean (the handle's next run makes it anew)."""
    state = run.states[index]
    if state is None or not spec.cleaned_check:
        return True
    provider = run.providers((run.resources[index].get("provider") or {}).get("name") or spec.provider)
    return evaluate_check(spec.cleaned_check, state, run.handle, provider.template_vars(run.handle)) is True


def _make_fresh(ctx: Context, handle: dict[str, Any], providers: Providers) -> Result:
    """The write that returns the handle to its pool as the pool builds one now (:func:`reuse.fresh_ops`)."""
    ref = (handle.get("spec") or {}).get("resourcePool") or {}
    pool = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_POOL, ref.get("name") or "",
                                ctx.settings.operator_namespace)
    if pool is None or binding.is_deleting(pool):
        return _fail(ctx, handle, f"ResourcePool {ref.get('name')} is gone: nothing to return the handle to.")
    pool_spec = pool.get("spec") or {}
    names = [pool_spec["provider"]["name"]] if pool_spec.get("provider") else \
        [(r.get("provider") or {}).get("name") for r in pool_spec.get("resources") or []]
    lifespan = pool_handles.handle_lifespan(ctx, pool, [providers(n) for n in dict.fromkeys(n for n in names if n)])
    ops = reuse.fresh_ops(handle, pool, lifespan, ctx.settings.domain)
    if ops is None:
        return _fail(ctx, handle, "Its claim added resources its pool's handles do not have: it cannot be fresh.")
    metadata = handle["metadata"]
    try:
        handle = ctx.kube.patch_json(handle["apiVersion"], RESOURCE_HANDLE, metadata["name"], metadata["namespace"],
                                     ops)
    except kube.Invalid as error:
        raise kube.Conflict(409, "Conflict", f"handle {metadata['name']} changed before its return") from error
    return _returned(ctx, handle)


def _returned(ctx: Context, handle: dict[str, Any]) -> Result:
    """The fresh write is done: the status says Running again, and the pool and the claims waiting for a handle
    look at once. The handle runs again to render its resources without the claim."""
    status = copy.deepcopy(handle.get("status") or {})
    status["state"] = handle_state.RUNNING
    _forget_reservation(ctx, handle, (status.pop("cleaning", None) or {}).get("claim") or {})
    handle = write_status(ctx, handle, status)
    pool = _pool(handle)
    ctx.events.emit(handle, "Reused", f"Cleaned and returned to ResourcePool {pool} unbound.")
    observe_handle_transition(pool, "Reused")
    # at once, as its own writes do not wake it: its resources are rendered without the claim
    return Result(requeue_at=ctx.now, wake=unique_keys(pool_key(ctx, handle), *binding.waiting_claim_keys(ctx, handle)))


def _forget_reservation(ctx: Context, handle: dict[str, Any], claim: dict[str, Any]) -> None:
    """The index keeps the released claim's reservation of the handle for a while after its bind; it would hold the
    returned handle back from the next claim until it lapses, so it is given up."""
    if ctx.index is None or not claim.get("name"):
        return
    claim_object = {"apiVersion": ctx.settings.api_version, "kind": RESOURCE_CLAIM,
                    "metadata": {"namespace": claim.get("namespace"), "name": claim["name"]}}
    for scope in scopes.handle_scopes(handle, ctx.settings.domain):
        ctx.index.release(handle["metadata"]["name"], claim_object, scope)


def _invalid(ctx: Context, handle: dict[str, Any], message: str) -> Result:
    """A ``spec.reuse`` that cannot apply: ``Synced=False`` (``InvalidReuse``) and a Warning Event say why, and
    the handle is deleted as without reuse."""
    status = copy.deepcopy(handle.get("status") or {})
    status["conditions"] = conditions.set_condition(status.get("conditions"), "Synced", False, "InvalidReuse",
                                                    message, ctx.now, handle["metadata"].get("generation"))
    handle = write_status(ctx, handle, status)
    ctx.events.emit(handle, "InvalidReuse", f"{message} Deleting the handle instead.", type="Warning")
    return _delete(ctx, handle)


def _fail(ctx: Context, handle: dict[str, Any], message: str) -> Result:
    """Cleaning failed or took too long: a Warning Event, and the handle is deleted (its pool replaces it)."""
    ctx.events.emit(handle, "CleaningFailed", f"{message} Deleting the handle.", type="Warning")
    observe_handle_transition(_pool(handle), "CleaningFailed")
    return _delete(ctx, handle)


def _delete(ctx: Context, handle: dict[str, Any]) -> Result:
    metadata = handle["metadata"]
    ctx.kube.delete_if_exists(handle["apiVersion"], RESOURCE_HANDLE, metadata["name"], metadata["namespace"],
                              uid=metadata.get("uid"))
    return Result(wake=unique_keys(_own_key(handle), pool_key(ctx, handle)))


def _cleaning_message(claim: dict[str, Any], spec: reuse.Reuse) -> str:
    released_by = f" by ResourceClaim {claim.get('namespace')}/{claim.get('name')}" if claim.get("name") else ""
    return (f"Released{released_by}; cleaning before it returns to its pool (cleanupTimeout "
            f"{timeutil.format_interval(spec.cleanup_timeout)}).")


def _pool(handle: dict[str, Any]) -> str:
    return str(((handle.get("spec") or {}).get("resourcePool") or {}).get("name") or "")


def _own_key(handle: dict[str, Any]) -> str:
    return keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"])


def _timestamp(value: Any) -> datetime | None:
    try:
        return timeutil.parse_timestamp(value) if value else None
    except ValueError:
        return None


def _expired(handle: dict[str, Any], now: datetime) -> bool:
    end = ((handle.get("spec") or {}).get("lifespan") or {}).get("end")
    parsed = _timestamp(end)
    return parsed is not None and parsed <= now

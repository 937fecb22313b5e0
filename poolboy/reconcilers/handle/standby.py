"""A pool handle on standby (docs/behaviour.md#standby): the handle realises what its pool asks (``spec.standby``)
and what a bind asks (resume), around the run that manages its resources.

:func:`prepare` runs before the resources are managed: it moves the handle into ``Standby`` (the replaced values
recorded in ``status.standby`` first, then the patch applied) or out of it (the resume patch applied first, then
``Resuming`` written), so a crash between two writes leaves a state the next run completes. While the handle is on
standby the patch is part of every definition it renders, so its normal update never undoes it. :func:`settle` runs
after health: a standby handle is not ready (its resources are stopped, or stopping) but keeps the health it went
on standby with (stopped is not broken: the pool must not delete it as unhealthy), and a resuming one runs once
every resource passes ``resumedCheck``.

A handle whose pool never used standby carries neither ``spec.standby`` nor ``status.state``: nothing here reads
anything for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from poolboy import kube
from poolboy.domain import health, linked
from poolboy.domain import standby as rules
from poolboy.domain.handle_state import RESUMED_AT, RESUMING, RUNNING, STANDBY, state_of
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_POOL
from poolboy.observability import observe_handle_transition
from poolboy.reconcilers.handle.handle_run import HandleRun
from poolboy.result import PermanentError
from poolboy.utils import templating, timeutil

log = logging.getLogger(__name__)


@dataclass
class Standby:
    """The standby of one handle run: its pool, the effective spec, and the state it is in."""

    pool: str
    spec: rules.StandbySpec
    state: str
    before: dict[str, Any] = field(default_factory=dict)  # the status the run started from


def _pool_name(handle: dict[str, Any]) -> str | None:
    return ((handle.get("spec") or {}).get("resourcePool") or {}).get("name")


def _wants_standby(run: HandleRun) -> bool:
    return (run.handle.get("spec") or {}).get("standby") is True


def _bound(run: HandleRun) -> bool:
    return bool((run.handle.get("spec") or {}).get("resourceClaim"))


def _effective(run: HandleRun, pool_name: str) -> rules.StandbySpec | None:
    """The pool's standby over its provider's, None when the pool is gone, has no standby or an invalid one (the
    pool reports that): the handle then only resumes."""
    ctx = run.ctx
    pool = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_POOL, pool_name, ctx.settings.operator_namespace)
    if not rules.uses_standby(pool):
        return None
    provider = rules.provider_name(pool or {})
    provider_standby = run.providers(provider).spec.get("standby") if provider else None
    try:
        return rules.effective(pool["spec"]["standby"] if pool else None, provider_standby)
    except rules.InvalidStandby:
        return None


_ONLY_RESUMES = rules.StandbySpec(running=0, patch={}, resume_patch=None, resumed_check=None,
                                  resume_timeout=rules.DEFAULT_RESUME_TIMEOUT)


def prepare(run: HandleRun) -> Standby | None:
    """Move the handle into or out of standby before its resources are managed; None for a handle of a pool
    without standby, and for a bound handle that runs (nothing left to do)."""
    handle = run.handle
    wants = (handle.get("spec") or {}).get("standby")
    state = state_of(handle)
    pool = _pool_name(handle)
    if pool is None or (wants is None and state is None) or (state == RUNNING and _bound(run)):
        return None
    spec = _effective(run, pool)
    wants_standby = wants is True and spec is not None
    standby = Standby(pool, spec or _ONLY_RESUMES, state or RUNNING, dict(handle.get("status") or {}))
    ready = (handle.get("status") or {}).get("ready") is True
    target = rules.next_state(state, wants_standby=wants_standby, bound=_bound(run), ready=ready, resumed=False)
    if standby.state != STANDBY and target == STANDBY:
        _go_on_standby(run, standby)
    elif standby.state == STANDBY and target == RESUMING:
        _resume(run, standby)
    elif standby.state == STANDBY:
        _keep_on_standby(run, standby)
    return standby


def _render(run: HandleRun, index: int, patch: dict[str, Any], what: str) -> dict[str, Any]:
    """``patch`` rendered with the override's variables of resource ``index``."""
    resource = run.resources[index]
    provider = run.providers((resource.get("provider") or {}).get("name") or "")
    template_vars = provider.template_vars(run.handle)
    outcome = linked.evaluate_links(provider, index, run.resources, run.states, get_provider=run.providers,
                                    resource_claim=run.claim, resource_handle=run.handle, template_vars=template_vars)
    try:
        rendered = templating.render(patch, run.override_variables(index, provider, outcome.template_vars),
                                     outcome.template_vars)
    except templating.TemplateError as error:
        raise PermanentError(rules.INVALID, f"standby {what} failed to render for resource {index}: {error}") \
            from error
    return rendered if isinstance(rendered, dict) else {}


def _patched(run: HandleRun, index: int, patch: dict[str, Any]) -> None:
    """Apply ``patch`` to resource ``index`` when its live state does not hold it yet (a merge patch)."""
    live = run.states[index]
    if live is None or not patch or rules.holds(live, patch):
        return
    metadata = live["metadata"]
    try:
        run.states[index] = run.ctx.kube.patch_merge(live["apiVersion"], live["kind"], metadata["name"],
                                                     metadata.get("namespace"), patch)
    except kube.NotFound:
        run.states[index] = None


def _standby_patches(run: HandleRun, standby: Standby) -> dict[int, dict[str, Any]]:
    return {i: _render(run, i, standby.spec.patch, "patch") for i in range(len(run.resources))}


def _go_on_standby(run: HandleRun, standby: Standby) -> None:
    """Record what the patch replaces, write ``Standby`` (a bind meanwhile fails the write: the bind wins), then
    apply the patch."""
    patches = _standby_patches(run, standby)
    restore = [rules.replaced_values(run.states[i], patches[i]) for i in range(len(run.resources))]
    run.status["state"] = STANDBY
    run.status["standby"] = {"since": timeutil.format_timestamp(run.ctx.now), "restore": restore}
    run.status.pop("resuming", None)
    run.write_status()
    for index, patch in patches.items():
        _patched(run, index, patch)
    run.standby_patches = patches
    standby.state = STANDBY
    run.ctx.events.emit(run.handle, "Standby", f"Put on standby: {standby.spec.running} unbound handle(s) of "
                                               f"ResourcePool {standby.pool} are kept running.")
    observe_handle_transition(standby.pool, STANDBY)


def _keep_on_standby(run: HandleRun, standby: Standby) -> None:
    """Still on standby: the patch holds on every resource and is part of what the handle renders."""
    patches = _standby_patches(run, standby)
    for index, patch in patches.items():
        _patched(run, index, patch)
    run.standby_patches = patches


def _resume(run: HandleRun, standby: Standby) -> None:
    """Apply the resume patch (or restore what the standby patch replaced), then write ``Resuming``.

    A resume patch that does not render for a resource falls back to the restore, with a Warning Event: a claim
    may be waiting for this handle, and a handle left on standby would never reach its resume deadline."""
    recorded = ((run.handle.get("status") or {}).get("standby") or {}).get("restore") or []
    for index in range(len(run.resources)):
        patch = recorded[index] if index < len(recorded) and isinstance(recorded[index], dict) else {}
        if standby.spec.resume_patch is not None:
            try:
                patch = _render(run, index, standby.spec.resume_patch, "resumePatch")
            except PermanentError as error:
                run.ctx.events.emit(run.handle, rules.INVALID, f"{error.message}; restoring what the standby patch "
                                                               f"replaced instead.", type="Warning")
        _patched(run, index, patch)
    run.status["state"] = RESUMING
    run.status["resuming"] = rules.resuming_status(run.ctx.now, standby.spec.resume_timeout)
    run.write_status()
    standby.state = RESUMING
    why = "bound to a claim" if _bound(run) else f"ResourcePool {standby.pool} keeps it running"
    run.ctx.events.emit(run.handle, "Resuming", f"Resuming from standby ({why}); deadline "
                                                f"{run.status['resuming']['deadline']}.")
    observe_handle_transition(standby.pool, RESUMING)


def _resumed(run: HandleRun, standby: Standby) -> bool:
    """Every resource passes ``resumedCheck`` (the provider's readinessCheck by default)."""
    for index, resource in enumerate(run.resources):
        provider: Provider = run.providers((resource.get("provider") or {}).get("name") or "")
        check = standby.spec.resumed_check or provider.readiness_check
        if run.states[index] is None:
            return False
        if check and health.evaluate_check(check, run.states[index], run.handle,
                                           provider.template_vars(run.handle)) is not True:
            return False
    return True


def settle(run: HandleRun, standby: Standby | None) -> None:
    """After health: a standby handle keeps the health it went on standby with; a resuming handle runs once
    resumed; a handle the pool keeps running says so."""
    if standby is None:
        return
    if standby.state == STANDBY:
        run.status["ready"] = False  # stopped or stopping: whatever its resources still say, a bind waits for it
        if standby.before.get("healthy") is None:
            run.status.pop("healthy", None)
        else:
            run.status["healthy"] = standby.before["healthy"]
    elif standby.state == RESUMING and _resumed(run, standby):
        run.status["state"] = RUNNING
        run.status.pop("resuming", None)
        run.status.pop("standby", None)
        run.status[RESUMED_AT] = timeutil.format_timestamp(run.ctx.now)
        run.ctx.events.emit(run.handle, "Resumed", "Resumed from standby: its resources pass the resumed check.")
        observe_handle_transition(standby.pool, RUNNING)
        # the pool asked it back on standby while it resumed (another handle it keeps running came back): nothing
        # else wakes it, so it runs once more to go there
        run.run_again = run.run_again or (_wants_standby(run) and not _bound(run))
    elif standby.state == RUNNING and run.status.get("state") != RUNNING:
        run.status["state"] = RUNNING
        observe_handle_transition(standby.pool, RUNNING)

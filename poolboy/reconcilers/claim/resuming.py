"""A claim bound to a handle that resumes from standby (docs/behaviour.md#standby): ``Ready=False`` reason
``Resuming`` until it runs, and past its deadline another handle serves the claim.

The replacement is the claim's own bind, in the usual order of writes: the claim names the new handle
(:meth:`~poolboy.reconcilers.claim.claim_run.ClaimRun.intend`), binds it with the conditional patch, then records
it in ``status.resourceHandle``. Only then does the stuck handle, seeing its claim record another, delete itself
(its cleanup leaves the claim alone). A crash between any two writes leaves the stuck handle bound and recorded, so
the next run resumes the same replacement (named on the claim) instead of choosing another: never a double bind.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from poolboy import keys
from poolboy.domain import binding, conditions
from poolboy.domain import standby as rules
from poolboy.domain.handle_state import RESUMING, STANDBY, state_of
from poolboy.reconcilers.claim import bind
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode
from poolboy.utils import timeutil

#: how long a claim whose handle did not resume in time waits before it looks for a replacement again
RETRY = timedelta(seconds=15)

REASON = "Resuming"
TIMEOUT_REASON = "ResumeTimeout"


def replace_stuck(run: ClaimRun, mode: Mode, handle: dict[str, Any]) -> dict[str, Any]:
    """The handle that serves the claim: ``handle``, or its replacement once it is past its resume deadline (the
    one an earlier run named, else the best unbound handle, else a new one where creation is allowed)."""
    if not rules.resume_timed_out(handle, run.ctx.now):
        return handle
    stuck = handle["metadata"]["name"]
    claim_resources = mode.claim_resources(run)
    replacement = None
    if binding.intended_handle(run.ctx, run.claim) not in (None, stuck):
        replacement = bind.resume(run, mode, claim_resources)
    if replacement is None:
        replacement = bind.bind(run, mode, claim_resources)
    creates = not any(p.disable_creation for p in mode.providers) and not run.spec.get("disableCreation")
    if replacement is None and creates:
        replacement = bind.create_handle(run, mode, claim_resources)
    if replacement is None:
        run.requeue.append(run.ctx.now + RETRY)
        return handle
    deadline = ((handle.get("status") or {}).get("resuming") or {}).get("deadline")
    run.event(TIMEOUT_REASON, f"ResourceHandle {stuck} did not resume from standby by its deadline {deadline}; "
                              f"ResourceHandle {replacement['metadata']['name']} serves the claim instead.",
              "Warning")
    run.wake.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], stuck))
    return replacement


def show(run: ClaimRun, handle: dict[str, Any]) -> None:
    """While its handle resumes, the claim is ``Ready=False`` reason ``Resuming`` (an Event when that begins), and
    runs again at the deadline."""
    if state_of(handle) not in (STANDBY, RESUMING):  # bound on standby: its own run starts the resume
        return
    resuming = (handle.get("status") or {}).get("resuming") or {}
    deadline = rules.resume_deadline(handle)
    name = handle["metadata"]["name"]
    if deadline is None:
        message = f"ResourceHandle {name} is resuming from standby."
    elif deadline <= run.ctx.now:
        message = f"ResourceHandle {name} did not resume by {resuming.get('deadline')}; waiting for a replacement."
    else:
        timeout = timeutil.format_interval(deadline - timeutil.parse_timestamp(resuming["since"])) \
            if resuming.get("since") else "?"
        message = f"ResourceHandle {name} is resuming from standby (since {resuming.get('since')}, timeout {timeout})."
    previous = conditions.get_condition(run.stored_conditions(), "Ready") or {}
    run.condition("Ready", False, REASON, message)
    if previous.get("reason") != REASON:
        run.event(REASON, message)
    if deadline is not None and deadline > run.ctx.now:
        run.requeue.append(deadline)

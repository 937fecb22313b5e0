"""ResourceProvider reconciler: report the provider's own validity, and make a change take effect on its dependants
at once by waking them (docs/behaviour.md#triggers-and-finalizers).

Validity (beyond upstream): the spec is checked by :mod:`poolboy.domain.provider_validation`; the status carries
``Valid`` (True ``Valid`` / False ``InvalidSpec`` with ``<field path>: <problem>`` messages) and ``Ready`` mirroring
it, both with ``observedGeneration``, so ``kubectl wait --for=condition=Ready resourceprovider/X`` works. One
Warning Event ``InvalidSpec`` is emitted when a problem first appears or changes, never on a converged re-run.

Fan-out: dependants are found from fresh lists — claims that use the provider (or, still unbound, may now select it:
see :func:`claim_depends`), handles and pools whose spec names it. They are woken when the run wrote the status
(a new generation, a change of validity) or when the provider is gone; the run caused by that status write is
converged and wakes nothing, so one change of the provider costs its dependants one run, not two. A fan-out
lost to a crash between the write and the wake is repaired by the dependants' periodic sweeps.
"""

from __future__ import annotations

import logging
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import conditions as cond
from poolboy.domain.provider import Provider
from poolboy.domain.provider_validation import describe
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE, RESOURCE_POOL, RESOURCE_PROVIDER
from poolboy.result import Result

log = logging.getLogger(__name__)

MAX_LISTED = 5  # problems written into the condition message; the rest are counted


def _names(spec_or_status: dict[str, Any] | None) -> set[str]:
    """Provider names referenced by a ``provider`` entry or ``resources[].provider`` of a spec or status."""
    body = spec_or_status or {}
    names = {(body.get("provider") or {}).get("name")}
    names |= {((r or {}).get("provider") or {}).get("name") for r in body.get("resources") or []}
    return {n for n in names if n}


def claim_depends(claim: dict[str, Any], name: str, linking: frozenset[str] = frozenset()) -> bool:
    """Whether a change of provider ``name`` can change what ``claim`` does: it names the provider (in its spec or
    status), or, still unbound, it may now select it — a resource without a provider name is matched against every
    provider's template, and a provider it names may link to ``name`` (``linking``: the providers that link to it,
    directly or through others). An unbound claim that names other providers only is left alone: waking every
    unbound claim at every provider change made each new provider re-run them all."""
    status = claim.get("status") or {}
    spec = claim.get("spec") or {}
    if name in _names(status) or name in _names(spec):
        return True
    if status.get("resourceHandle"):
        return False
    matched = any(not ((r or {}).get("provider") or {}).get("name") for r in spec.get("resources") or [])
    return matched or not _names(spec).isdisjoint(linking)


def linking_providers(providers: list[dict[str, Any]], name: str) -> frozenset[str]:
    """Names of the providers that link to ``name`` (``linkedResourceProviders``), directly or through others."""
    linked_by: dict[str, set[str]] = {}
    for provider in providers:
        for link in (provider.get("spec") or {}).get("linkedResourceProviders") or []:
            if isinstance(link, dict) and link.get("name"):
                linked_by.setdefault(str(link["name"]), set()).add(provider["metadata"]["name"])
    found: set[str] = set()
    todo = [name]
    while todo:
        for parent in linked_by.get(todo.pop(), ()):
            if parent not in found:
                found.add(parent)
                todo.append(parent)
    found.discard(name)
    return frozenset(found)


def dependants(ctx: Context, name: str) -> tuple[str, ...]:
    """Keys of the claims, handles and pools that must look at the provider ``name`` again."""
    api = ctx.settings.api_version
    linking = linking_providers(ctx.kube.list(api, RESOURCE_PROVIDER, ctx.settings.operator_namespace), name)
    wake: list[str] = []
    for claim in ctx.kube.list(api, RESOURCE_CLAIM):
        if claim_depends(claim, name, linking):
            wake.append(keys.make(keys.CLAIM, claim["metadata"]["namespace"], claim["metadata"]["name"]))
    for kind, token in ((RESOURCE_HANDLE, keys.HANDLE), (RESOURCE_POOL, keys.POOL)):
        for obj in ctx.kube.list(api, kind, ctx.settings.operator_namespace):
            if name in _names(obj.get("spec")):
                wake.append(keys.make(token, obj["metadata"]["namespace"], obj["metadata"]["name"]))
    return tuple(wake)


def validity(problems: list[tuple[str, str]]) -> tuple[bool, str, str]:
    """``(valid, reason, message)`` of the ``Valid`` condition for a provider's problems."""
    if not problems:
        return True, "Valid", "The provider's spec is valid."
    listed = "; ".join(describe(p) for p in problems[:MAX_LISTED])
    more = f" (and {len(problems) - MAX_LISTED} more)" if len(problems) > MAX_LISTED else ""
    return False, "InvalidSpec", listed + more


def desired_status(obj: dict[str, Any], problems: list[tuple[str, str]], ctx: Context) -> dict[str, Any]:
    """The provider's status with ``Valid`` and ``Ready`` set; other status keys are kept."""
    status = dict(obj.get("status") or {})
    valid, reason, message = validity(problems)
    generation = obj["metadata"].get("generation")
    for type_ in ("Valid", "Ready"):
        status["conditions"] = cond.set_condition(status.get("conditions"), type_, valid, reason, message, ctx.now,
                                                  generation)
    return status


def _report(ctx: Context, obj: dict[str, Any]) -> bool:
    """Write ``Valid``/``Ready`` when they changed and warn once per new problem; whether the status was written."""
    problems = Provider(obj).problems
    status = desired_status(obj, problems, ctx)
    if status == (obj.get("status") or {}):
        return False
    previous = cond.get_condition((obj.get("status") or {}).get("conditions"), "Valid") or {}
    current = cond.get_condition(status["conditions"], "Valid") or {}
    try:
        obj = ctx.kube.replace_status({**obj, "status": status})
    except kube.NotFound:  # deleted meanwhile, or a CRD without the status subresource (not yet upgraded)
        log.warning("ResourceProvider %s: status not written (no status subresource?); %s", obj["metadata"]["name"],
                    current.get("message"))
        return True
    if problems and (previous.get("status"), previous.get("message")) != (cond.FALSE, current.get("message")):
        ctx.events.emit(obj, "InvalidSpec", current["message"], type="Warning")
    elif not problems and previous.get("status") == cond.FALSE:
        ctx.events.emit(obj, "Valid", "The provider's spec is valid again.")
    return True


def reconcile(ctx: Context, namespace: str, name: str) -> Result:
    def once() -> Result:
        obj = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_PROVIDER, name, namespace)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return Result(wake=dependants(ctx, name))
        return Result(wake=dependants(ctx, name)) if _report(ctx, obj) else Result()

    return kube.conflict_policy()(once)

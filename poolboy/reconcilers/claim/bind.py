"""Binding a claim to one of the unbound handles that could serve it, and recording a handle in the claim.

The candidates come from one of two sources behind :class:`CandidateSource`: the engine's index of unbound
handles when it can answer (small summaries ranked without reading every handle, the best reserved atomically so
that concurrent claims do not all race for the same one), otherwise a list of the unbound handles. Either way the
claim first names the candidate on itself (:meth:`ClaimRun.intend`, so that two runs of the claim at once bind the
same one), and the bind itself is one conditional JSON patch (:func:`try_bind`): the API server decides which claim
wins a handle; a loser reads the handle again, adopts it when a run of the same claim won it, and otherwise moves on
to the next candidate.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import Any, Protocol

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import binding, claim_lifespan, matching
from poolboy.domain.binding import candidates as candidate_index
from poolboy.domain.binding import scopes
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode

log = logging.getLogger(__name__)


class CandidateSource(Protocol):
    """Where a claim's candidates come from; ``bind`` returns the handle it bound, or None."""

    def bind(self, run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Bind the best candidate that can still be bound (None: none, or older waiting claims come first)."""


def bind(run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Bind the claim to the best unbound handle that serves it, or None."""
    return candidate_source(run, mode).bind(run, mode, claim_resources)


def bind_queued(run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]], position: int | None,
                cap: int | None) -> tuple[dict[str, Any] | None, bool]:
    """Bind a claim that queues: ``position`` is its place under its scope's queue policy (None: oldest first) and
    ``cap`` its namespace's limit (:mod:`.waiting`); the handle or None, and whether the cap held it back."""
    source = candidate_source(run, mode, position, cap)
    handle = source.bind(run, mode, claim_resources)
    return handle, isinstance(source, IndexedCandidates) and source.capped


#: how old a snapshot of the index's summaries a claim may rank first (a burst of claims in one worker process shares
#: one read; a claim that finds no free handle in it reads afresh before it concludes there is none)
SNAPSHOT_S = 1.0


def candidate_source(run: ClaimRun, mode: Mode, position: int | None = None,
                     cap: int | None = None) -> CandidateSource:
    """The index when it can answer for the claim's scope, the listed unbound handles otherwise."""
    pool, scope = binding_scope(run, mode)
    # a handle without resources or provider serves any claim: outside a pool, its scope is read alongside
    anywhere = () if pool else (scopes.provider_scope(""),)
    index = run.ctx.index
    if index is not None:
        asked = time.monotonic()
        summaries = index.summaries(scope, *anywhere, max_age=SNAPSHOT_S)
        if summaries is not None:
            return IndexedCandidates(index, scope, summaries, anywhere, recent=summaries.read_at < asked,
                                     position=position, cap=cap)
    return ListedCandidates(scope, anywhere)


class ListedCandidates:
    """The unbound handles of the claim's scopes, listed whole from the reader and ranked whole."""

    def __init__(self, scope: str, fallbacks: tuple[str, ...] = ()) -> None:
        self.scope = scope
        self.fallbacks = fallbacks

    def bind(self, run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
        provider_names = [p.name for p in mode.providers]
        values = parameter_values(run, mode)
        listed = [h for h in binding.list_unbound(run.ctx, self.scope, *self.fallbacks)
                  if binding.provider_compatible(h, provider_names, values)]
        if not listed:
            return None
        providers = providers_by_name(run.ctx, listed, mode.providers)
        ranked = matching.rank_candidates(run.claim, listed, providers, run.ctx.now,
                                          domain=run.ctx.settings.domain, claim_resources=claim_resources)
        for candidate in ranked:
            handle = bind_candidate(run, mode, candidate, claim_resources)
            if handle is not None:
                return handle
        return None


class IndexedCandidates:
    """Warm binding from the engine's index (:mod:`poolboy.domain.binding.candidates`): rank from summaries, reserve the
    best atomically, bind it with the usual conditional patch, release and go on when the bind loses. The first
    summaries may be a snapshot read before the claim asked; then, before it answers "no handle", it ranks a read of
    its own (a read of its own is not repeated: a claim no handle can serve reads the index once)."""

    def __init__(self, index: candidate_index.HandleIndex, scope: str, summaries: candidate_index.Snapshot,
                 fallbacks: tuple[str, ...] = (), *, recent: bool = False, position: int | None = None,
                 cap: int | None = None) -> None:
        self.index = index
        self.position = position
        self.cap = cap
        self.capped = False  # the reservation answered that the claim's namespace holds its cap
        self.scope = scope
        self.summaries = summaries
        self.fallbacks = fallbacks
        self.recent = recent  # a snapshot read before this claim asked (else a read of its own)

    def bind(self, run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
        handle, wait = self._bind_from(self.summaries, run, mode, claim_resources)
        if handle is not None or wait or not self.recent:
            return handle
        fresh = self.index.summaries(self.scope, *self.fallbacks)
        if fresh is None:  # the index cannot answer now: list, as when it could not answer at all
            return ListedCandidates(self.scope, self.fallbacks).bind(run, mode, claim_resources)
        return self._bind_from(fresh, run, mode, claim_resources)[0]

    def _bind_from(self, summaries: candidate_index.Snapshot, run: ClaimRun, mode: Mode,
                   claim_resources: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, bool]:
        """(the handle bound, or None; whether the claim must wait for older claims of its scope)."""
        index = self.index
        provider_names = [p.name for p in mode.providers]
        values = parameter_values(run, mode)
        representatives: dict[str, dict[str, Any] | None] = {}  # read while ranking, reused once for the bind

        def fetch(name: str) -> dict[str, Any] | None:
            if name not in representatives:
                representatives[name] = run.read_handle(name)
            return representatives[name]

        ranked = candidate_index.rank(
            run.claim, summaries, fetch=fetch,
            providers=lambda handles: providers_by_name(run.ctx, handles, mode.providers),
            now=run.ctx.now, domain=run.ctx.settings.domain, claim_resources=claim_resources)
        while True:
            reservation = index.reserve(self.scope, ranked, run.claim, self.position, self.cap)
            if reservation.name is None:
                self.capped = reservation.capped
                return None, reservation.wait
            ranked = itertools.chain(reservation.untried, ranked)
            if reservation.name in representatives:
                candidate = representatives.pop(reservation.name)
            else:  # the engine's index handed the reserved handle to the run's reader: no round trip of its own
                candidate = run.read_handle(reservation.name)
            handle = None
            if candidate is not None and candidate_index.is_unbound(candidate, run.ctx.settings.domain) \
                    and binding.provider_compatible(candidate, provider_names, values):
                handle = bind_candidate(run, mode, candidate, claim_resources)
            if handle is not None:
                return handle, False
            index.release(reservation.name, run.claim, self.scope)


def parameter_values(run: ClaimRun, mode: Mode) -> dict[str, Any] | None:
    """The effective parameter values of a provider-mode claim, None in resources mode."""
    spec = mode.provider_spec(run)
    return None if spec is None else spec.get("parameterValues") or {}


def binding_scope(run: ClaimRun, mode: Mode) -> tuple[str | None, str]:
    """The claim's pool (``D/resource-pool-name`` annotation) and the binding scope it draws from."""
    provider_names = [p.name for p in mode.providers]
    pool = (run.meta.get("annotations") or {}).get(run.ctx.label("resource-pool-name"))
    return pool, scopes.claim_scope(pool, provider_names[0] if provider_names else "")


#: how often a run binds a handle that stays unbound while its version moves on (its status written meanwhile)
#: before it starts over from fresh reads: the claim names the handle, so it is not given up for another
BIND_ATTEMPTS = 3


def bind_candidate(run: ClaimRun, mode: Mode, candidate: dict[str, Any],
                   claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Name the candidate on the claim (:meth:`ClaimRun.intend`), then bind it with the conditional patch; the
    handle, or None once it can no longer be this claim's (bound to another claim, deleting or gone)."""
    run.intend(candidate["metadata"]["name"])
    for _ in range(BIND_ATTEMPTS):
        handle = try_bind(run.ctx, candidate, bind_patch(run, mode, candidate, claim_resources))
        if handle is not None:
            bound(run, mode, handle, "Bound", f"Bound ResourceHandle {handle['metadata']['name']}")
            return handle
        fresh = run.ctx.api_reader.get_or_none(run.ctx.settings.api_version, RESOURCE_HANDLE,
                                               candidate["metadata"]["name"], run.ctx.settings.operator_namespace)
        if fresh is None or binding.is_deleting(fresh):
            return None
        if binding.bound_to(run.ctx, fresh, run.claim):  # another run of this claim bound it
            bound(run, mode, fresh, "Bound", f"Adopted ResourceHandle {fresh['metadata']['name']}")
            return fresh
        if not candidate_index.is_unbound(fresh, run.ctx.settings.domain) or \
                fresh["metadata"].get("resourceVersion") == candidate["metadata"].get("resourceVersion"):
            return None  # another claim's, or the patch itself was refused: the next candidate
        candidate = fresh
    raise kube.Conflict(409, "Conflict", f"handle {candidate['metadata']['name']} changed under every bind; "
                                         f"starting over")


def bind_patch(run: ClaimRun, mode: Mode, candidate: dict[str, Any],
               claim_resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bind's JSON patch; its lifespan end starts from the handle's default now."""
    end = None
    raw_default = ((candidate.get("spec") or {}).get("lifespan") or {}).get("default")
    if raw_default:
        limits = claim_lifespan.handle_limits(candidate, run.claim, mode.template_vars(candidate))
        if limits.default is not None:
            end = run.ctx.now + limits.default
    return binding.bind_ops(run.ctx, run.claim, candidate, provider_spec=mode.provider_spec(run),
                            claim_resources=claim_resources, lifespan_end=end)


def bound(run: ClaimRun, mode: Mode, handle: dict[str, Any], reason: str, message: str) -> None:
    """Record a handle bound in this run; its pool replenishes."""
    pool = (handle["metadata"].get("labels") or {}).get(run.ctx.label("resource-pool-name"))
    if pool:
        run.hold.append(keys.make(keys.POOL, run.ctx.settings.operator_namespace, pool))
    record_binding(run, mode, handle, reason, message)


def try_bind(ctx: Context, handle: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Apply the bind patch; ``None`` when another writer got there first (422 failed test, 409, 404)."""
    try:
        return ctx.kube.patch_json(ctx.settings.api_version, RESOURCE_HANDLE, handle["metadata"]["name"],
                                   ctx.settings.operator_namespace, ops)
    except (kube.Invalid, kube.Conflict, kube.NotFound) as error:
        log.info("bind of handle %s lost a race (%s)", handle["metadata"]["name"], error)
        return None


def record_binding(run: ClaimRun, mode: Mode, handle: dict[str, Any], reason: str, message: str) -> None:
    """``status.resourceHandle`` and a fresh ``status.lifespan`` whose start is the bind time."""
    run.status["resourceHandle"] = {"apiVersion": run.ctx.settings.api_version, "kind": RESOURCE_HANDLE,
                                    "name": handle["metadata"]["name"], "namespace": handle["metadata"]["namespace"]}
    limits = claim_lifespan.handle_limits(handle, run.claim, mode.template_vars(handle))
    run.status["lifespan"] = claim_lifespan.status_lifespan({}, handle, limits, start=run.ctx.now)
    run.status.pop("queue", None)
    run.wake.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))
    run.event(reason, message)
    run.handle_events.append((handle, "Bound", f"Bound to ResourceClaim {run.meta['namespace']}/{run.meta['name']}"))
    run.bound_now = True


def providers_by_name(ctx: Context, handles: list[dict[str, Any]], known: list[Provider]) -> dict[str, Any]:
    """Every provider the candidates or the claim reference (for ``matchIgnore``), by name."""
    result: dict[str, Any] = {p.name: p.obj for p in known}
    for handle in handles:
        for resource in (handle.get("spec") or {}).get("resources") or []:
            name = (resource.get("provider") or {}).get("name")
            if name and name not in result:
                provider = Provider.get_or_none(ctx, name)
                if provider is not None:
                    result[name] = provider.obj
    return result

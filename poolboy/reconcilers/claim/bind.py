"""The bind decision, top to bottom: which handle a claim gets.

:func:`bind_or_create` is the entry; it reads in the order a claim is decided:

1. **Resume** what an earlier run of the claim chose and named on it
   (:data:`~poolboy.domain.binding.BINDING_ANNOTATION`, :func:`resume`): bound to this claim, adopted; still
   unbound, bound; the claim's own handle not created yet, created. A named handle that can no longer be this
   claim's (bound to another, deleting, gone) is given up for a new choice.
2. **Candidates** (:func:`candidate_source`): the unbound handles of the claim's binding scope (its pool, else its
   provider; :mod:`poolboy.domain.binding.scopes`), as the engine's index summarises them when it can answer
   (:class:`IndexedCandidates`), else listed whole (:class:`ListedCandidates`); ranked best first by
   :mod:`poolboy.domain.matching` (``matchIgnore``, parameter values, age).
3. **Order** among claims (only when the claim may not create a handle): the scope's queue policy
   (:mod:`.waiting` and :mod:`poolboy.domain.binding.scope_policy`) gives the claim its place (oldest first, FIFO,
   fair share, priorities) and its namespace's cap; a claim whose turn has not come, or whose namespace holds its
   cap, waits labelled ``D/resource-claim-waiting`` with ``status.queue``.
4. **Reservation** (:meth:`IndexedCandidates.bind`): the index reserves the best candidate for this claim atomically
   (:mod:`cache.handle_index`, the claim's place and cap checked in the same script), so concurrent claims spread
   over the handles instead of racing for one; a lost bind releases it and the next is reserved.
5. **The bind** (:func:`bind_candidate`): the claim names the candidate on itself first (:meth:`ClaimRun.intend`, so
   two runs of the claim bind the same handle), then one conditional JSON patch on the handle (:func:`try_bind`,
   the patch from :func:`poolboy.domain.binding.bind_ops`): the API server decides which claim wins a handle; a loser
   reads the handle again, adopts it when a run of the same claim won it, and otherwise moves on.
6. **Create** when nothing could be bound and creation is allowed (:func:`create_handle`: the handle gets the
   lifespan its providers allow, the claim's requested end clamped to them; idempotent by name, and named on the
   claim first, as before a bind), or time out of the queue (``maxWait``: give up or create).
7. **Recorded** (:func:`bound`, :func:`record_binding`): ``status.resourceHandle``, the lifespan from the bind, the
   handle and its pool woken, the Events.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import time
from datetime import datetime
from typing import Any, Protocol

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import binding, claim_lifespan, handle_factory, matching
from poolboy.domain import lifespan as lifespan_rules
from poolboy.domain.binding import candidates as candidate_index
from poolboy.domain.binding import scopes
from poolboy.domain.binding.queue_policy import OnTimeout
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.reconcilers.claim import waiting
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.reconcilers.claim.modes import Mode
from poolboy.utils import timeutil

log = logging.getLogger(__name__)


def bind_or_create(run: ClaimRun, mode: Mode) -> dict[str, Any] | None:
    """Finish the bind an earlier run chose, else bind an unbound handle, else create one, else (creation disabled)
    queue; the handle, or None. The finalizer (and init) go onto the claim in the write that names the handle, before
    it is bound or created (:meth:`ClaimRun.intend`)."""
    claim_resources = mode.claim_resources(run)
    resumed = resume(run, mode, claim_resources)
    if resumed is not None:
        return resumed
    providers_create = not any(p.disable_creation for p in mode.providers)
    if providers_create and not run.spec.get("disableCreation"):
        return bind(run, mode, claim_resources) or create_handle(run, mode, claim_resources)
    if waiting.refused(run):
        return None
    where = waiting.queued(run, binding_scope(run, mode)[1])
    if waiting.timed_out(run, where.policy):
        if where.policy.on_timeout is OnTimeout.CREATE_HANDLE and providers_create:
            return bind(run, mode, claim_resources) or create_handle(run, mode, claim_resources)
        waiting.time_out(run, where)
        return None
    handle, capped = (None, False) if where.capped else bind_queued(run, mode, claim_resources, where.position,
                                                                     where.policy.max_per_namespace)
    if handle is not None:
        return handle
    where = waiting.held_by_cap(where) if capped else where
    if waiting.refuses(run, where):
        waiting.refuse(run, where)
    else:
        waiting.wait(run, where)
    return None


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
    # the bind's watch event would run the handle while this run still writes; recording the binding wakes it
    run.ctx.will_wake(keys.make(keys.HANDLE, candidate["metadata"]["namespace"], candidate["metadata"]["name"]))
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


def try_bind(ctx: Context, handle: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Apply the bind patch; ``None`` when another writer got there first (422 failed test, 409, 404)."""
    try:
        return ctx.kube.patch_json(ctx.settings.api_version, RESOURCE_HANDLE, handle["metadata"]["name"],
                                   ctx.settings.operator_namespace, ops)
    except (kube.Invalid, kube.Conflict, kube.NotFound) as error:
        log.info("bind of handle %s lost a race (%s)", handle["metadata"]["name"], error)
        return None


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


# --- 6. create: the claim's own handle, when nothing could be bound ---------------------------------------------

def create_handle(run: ClaimRun, mode: Mode, claim_resources: list[dict[str, Any]]) -> dict[str, Any]:
    """Create (or adopt) the claim's own handle and record it in the claim's status."""
    limits = lifespan_rules.combine_limits([
        dataclasses.replace(p.lifespan_limits(run.ctx, resource_claim=run.claim),
                            default_raw=p.lifespan.get("default"), maximum_raw=p.lifespan.get("maximum"),
                            relative_maximum_raw=p.lifespan.get("relativeMaximum"))
        for p in mode.providers])
    requested = claim_lifespan.parse_optional((run.spec.get("lifespan") or {}).get("end"))
    annotations = {run.ctx.label(claim_lifespan.LIFESPAN_REQUEST_ANNOTATION):
                   claim_lifespan.lifespan_request(requested, limits)} if requested is not None else None
    name = handle_factory.handle_name(run.meta["uid"])
    run.intend(name)
    # the create's ADDED event would run the handle while this run still writes; recording the binding wakes it
    run.ctx.will_wake(keys.make(keys.HANDLE, run.ctx.settings.operator_namespace, name))
    handle, created = handle_factory.create_or_adopt(run.ctx, run.claim, provider_spec=mode.provider_spec(run),
                                                     resources=claim_resources,
                                                     lifespan=_spec_lifespan(run, limits, requested) or None,
                                                     annotations=annotations)
    name = handle["metadata"]["name"]
    if created:
        record_binding(run, mode, handle, "HandleCreated", f"Created ResourceHandle {name}", on_handle=False)
    else:
        record_binding(run, mode, handle, "Bound", f"Adopted ResourceHandle {name}", on_handle=False)
    return handle


def _spec_lifespan(run: ClaimRun, limits: lifespan_rules.Limits, requested: datetime | None) -> dict[str, Any]:
    """The new handle's ``spec.lifespan``: the combined limits and the end the claim gets."""
    spec_lifespan: dict[str, Any] = {}
    if limits.default is not None:
        spec_lifespan["default"] = timeutil.format_interval(limits.default)
    # maximum and relativeMaximum keep the provider's raw strings (templates are re-evaluated every reconcile)
    if limits.maximum is not None:
        spec_lifespan["maximum"] = limits.maximum_raw or timeutil.format_interval(limits.maximum)
    if limits.relative_maximum is not None:
        spec_lifespan["relativeMaximum"] = limits.relative_maximum_raw or \
            timeutil.format_interval(limits.relative_maximum)
    end = lifespan_rules.new_handle_end(requested, limits, run.ctx.now, run.ctx.now)
    if end is not None:
        spec_lifespan["end"] = timeutil.format_timestamp(end)
    return spec_lifespan


# --- 7. recorded: what the claim keeps of the handle it bound, adopted or created -----------------------------------

def bound(run: ClaimRun, mode: Mode, handle: dict[str, Any], reason: str, message: str) -> None:
    """Record a handle bound in this run; its pool replenishes."""
    pool = (handle["metadata"].get("labels") or {}).get(run.ctx.label("resource-pool-name"))
    if pool:
        run.hold.append(keys.make(keys.POOL, run.ctx.settings.operator_namespace, pool))
    record_binding(run, mode, handle, reason, message)


def record_binding(run: ClaimRun, mode: Mode, handle: dict[str, Any], reason: str, message: str,
                   on_handle: bool = True) -> None:
    """``status.resourceHandle`` and a fresh ``status.lifespan`` whose start is the bind time; ``reason`` as an Event
    on the claim and, ``on_handle``, a ``Bound`` Event on the handle (a handle created for the claim is born bound:
    its Events start with what it creates)."""
    run.status["resourceHandle"] = {"apiVersion": run.ctx.settings.api_version, "kind": RESOURCE_HANDLE,
                                    "name": handle["metadata"]["name"], "namespace": handle["metadata"]["namespace"]}
    limits = claim_lifespan.handle_limits(handle, run.claim, mode.template_vars(handle))
    run.status["lifespan"] = claim_lifespan.status_lifespan({}, handle, limits, start=run.ctx.now)
    run.status.pop("queue", None)
    run.wake.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))
    run.event(reason, message)
    if on_handle:
        run.handle_events.append((handle, "Bound",
                                  f"Bound to ResourceClaim {run.meta['namespace']}/{run.meta['name']}"))
    run.bound_now = True

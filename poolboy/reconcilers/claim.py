"""ResourceClaim reconciler: select providers, initialise, approve, validate, bind or create a handle, propagate
the claim into the handle, and mirror the handle (and the live managed resources) into the claim's status.

Level-based (DESIGN invariant 2): every run reads the claim, its providers, its handle and the managed resources
fresh, computes the desired claim status, and writes it once, with the claim's resourceVersion as precondition,
only when it changed. A Conflict anywhere re-runs the whole computation from fresh reads
(:func:`poolboy.kube.retry_on_conflict`), which is safe because every step is idempotent. Events are emitted only
after the status write succeeded, so a retried run does not repeat them.

The claim's status has one writer: this module. The handle's spec may be written here (bind, propagation), its
status never; cross-object effects are ``enqueue``d keys.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from datetime import datetime
from typing import Any

from poolboy import keys
from poolboy import kube as kube_errors
from poolboy.context import Context
from poolboy.domain import (
    binding,
    claim_lifespan,
    claim_parameters,
    claim_status,
    claim_validation,
    handle_factory,
    lifespan_warnings,
    matching,
)
from poolboy.domain import candidates as candidate_index
from poolboy.domain import conditions as cond
from poolboy.domain import lifespan as lifespan_rules
from poolboy.domain.object_meta import ensure_finalizer, is_ignored, our_finalizers
from poolboy.domain.provider import Provider, ProviderNotFound, clock_rerun
from poolboy.reconcilers import claim_waiting, preamble
from poolboy.result import PermanentError, Result
from poolboy.utils import schema, templating, timeutil
from poolboy.utils.merge import combine_merge_patches, deep_merge, merge_patch

log = logging.getLogger(__name__)

CLAIM_KIND = "ResourceClaim"
HANDLE_KIND = "ResourceHandle"
_UNINDEXED = object()  # the engine's handle index cannot answer: list candidates instead


def reconcile(ctx: Context, namespace: str, name: str) -> Result:
    """Converge one claim; see the module docstring. Conflicts re-run from fresh reads."""
    # the finalizer is staged into the run's one metadata write (see _ClaimRun.stage_finalizer)
    return preamble.reconcile_object(ctx, CLAIM_KIND, namespace, name, live=_live, deleting=_finalize,
                                     finalizer=False)


def _live(ctx: Context, claim: dict[str, Any]) -> Result:
    requested_start = claim_lifespan.parse_optional(((claim.get("spec") or {}).get("lifespan") or {}).get("start"))
    if requested_start is not None and requested_start > ctx.now:
        ensure_finalizer(ctx, claim)
        return Result(requeue_at=requested_start)  # nothing at all before the start (§3.16)

    handle_ref = (claim.get("status") or {}).get("resourceHandle") or {}
    if handle_ref.get("detached"):
        return _detached(ctx, ensure_finalizer(ctx, claim))

    run = _ClaimRun(ctx, claim)
    run.stage_finalizer()
    try:
        return run.process()
    except PermanentError as error:
        run.fail(error)
        raise


# --- deletion, finalizer, detached --------------------------------------------------------------------------------


def _finalize(ctx: Context, claim: dict[str, Any]) -> Result:
    """Claim deleted (§3.17): delete its handle unless detached (404 fine), then remove our finalizers."""
    metadata = claim["metadata"]
    handle_ref = (claim.get("status") or {}).get("resourceHandle") or {}
    enqueue: list[str] = []
    names: set[str] = set()
    if not handle_ref.get("detached"):
        names = {handle_ref["name"]} if handle_ref.get("name") else set()
        selector = (f"{ctx.label('resource-claim-name')}={metadata['name']},"
                    f"{ctx.label('resource-claim-namespace')}={metadata['namespace']}")
        for handle in ctx.kube.list(ctx.settings.api_version, HANDLE_KIND, ctx.settings.operator_namespace,
                                    label_selector=selector):
            if binding.bound_to(ctx, handle, claim):
                names.add(handle["metadata"]["name"])
        if not names:
            log.info("claim %s/%s deleted before binding", metadata["namespace"], metadata["name"])
        for handle_name in sorted(names):
            ctx.kube.delete_if_exists(ctx.settings.api_version, HANDLE_KIND, handle_name,
                                      ctx.settings.operator_namespace)
            enqueue.append(keys.make(keys.HANDLE, ctx.settings.operator_namespace, handle_name))
    finalizers = metadata.get("finalizers") or []
    ours = set(our_finalizers(ctx, claim))
    remaining = [f for f in finalizers if f not in ours]
    if remaining != finalizers:
        try:
            ctx.kube.patch_merge(ctx.settings.api_version, CLAIM_KIND, metadata["name"], metadata["namespace"],
                                 {"metadata": {"finalizers": remaining}},
                                 resource_version=metadata["resourceVersion"])
        except kube_errors.NotFound:
            return Result(enqueue=tuple(enqueue))
        # once, when our finalizer goes (a conflict above re-runs the cleanup without having emitted it)
        what = f"deleted ResourceHandle {', '.join(sorted(names))}" if names else "no ResourceHandle to delete"
        ctx.kube.emit_event(claim, "Deleted", f"ResourceClaim deleted; {what}.")
    return Result(enqueue=tuple(enqueue))


def _detached(ctx: Context, claim: dict[str, Any]) -> Result:
    """A detached claim only expires: deleted once ``status.lifespan.end`` has passed (§3.15)."""
    end = claim_lifespan.parse_optional(((claim.get("status") or {}).get("lifespan") or {}).get("end"))
    if end is None:
        return Result()
    if end > ctx.now:
        return Result(requeue_at=end)
    metadata = claim["metadata"]
    ctx.kube.emit_event(claim, "Expired", f"Detached claim lifespan ended at {timeutil.format_timestamp(end)}")
    ctx.kube.delete_if_exists(ctx.settings.api_version, CLAIM_KIND, metadata["name"], metadata["namespace"])
    return Result()


# --- one run over a live claim ------------------------------------------------------------------------------------


class _ClaimRun:
    """The state of one reconcile: the claim as last written, the desired status, events to emit after writing."""

    def __init__(self, ctx: Context, claim: dict[str, Any]) -> None:
        self.ctx = ctx
        self.claim = claim
        self.status: dict[str, Any] = copy.deepcopy(claim.get("status") or {})
        self.events: list[tuple[str, str, str, str | None]] = []
        self.handle_events: list[tuple[dict[str, Any], str, str]] = []  # (handle, reason, message)
        self.enqueue: list[str] = []
        self.batch: list[str] = []  # keys to run soon, batched (the pool of a bound handle)
        self.requeue: list[datetime] = []
        self.provider: Provider | None = None  # provider mode
        self.providers: list[Provider] = []  # one per resource (resources mode)
        self._resource_list: list[dict[str, Any]] | None = None
        self._bound_now = False  # bound or created in this run: no LifespanChange event for the initial end
        self._recorded_handle: tuple[str, dict[str, Any] | None] | None = None  # (name, handle) read this run
        self.staged: dict[str, Any] = {}  # metadata/spec changes not yet written (one merge patch per run)
        self.decided: set[str] = set()  # condition types this run set: stamped with the written generation
        self.read_version: str = claim["metadata"]["resourceVersion"]  # precondition of that patch

    # -- helpers --

    @property
    def meta(self) -> dict[str, Any]:
        return self.claim["metadata"]

    @property
    def spec(self) -> dict[str, Any]:
        return self.claim.get("spec") or {}

    @property
    def provider_mode(self) -> bool:
        return self.provider is not None

    def _condition(self, type_: str, status: bool | None, reason: str, message: str) -> None:
        self.status["conditions"] = cond.set_condition(self.status.get("conditions"), type_, status, reason, message,
                                                       self.ctx.now, self.meta.get("generation"))
        self.decided.add(type_)

    def _event(self, reason: str, message: str, type_: str = "Normal", action: str | None = None) -> None:
        self.events.append((reason, message, type_, action))

    def _patch_claim(self, patch: dict[str, Any]) -> None:
        """Stage a metadata/spec change: the run's copy shows it at once, the API gets every staged change of the
        run in ONE merge patch (:meth:`flush_claim`), before anything that depends on it is written elsewhere."""
        self.claim = merge_patch(self.claim, patch)
        self.staged = combine_merge_patches(self.staged, patch)

    def stage_finalizer(self) -> None:
        finalizers = self.meta.get("finalizers") or []
        if self.ctx.settings.finalizer not in finalizers:
            self._patch_claim({"metadata": {"finalizers": [*finalizers, self.ctx.settings.finalizer]}})

    def flush_claim(self) -> None:
        """Write the staged metadata/spec changes, with the resourceVersion the run read as precondition."""
        if not self.staged:
            return
        patch, self.staged = self.staged, {}
        self.claim = self.ctx.kube.patch_merge(self.ctx.settings.api_version, CLAIM_KIND, self.meta["name"],
                                               self.meta["namespace"], patch, resource_version=self.read_version)
        self.read_version = self.meta["resourceVersion"]

    def write_status(self) -> None:
        """Write the status only when it changed (a converged claim produces no write), then emit events.

        The run's own spec changes are written first; the conditions it decided describe the spec as written, so
        they carry the generation that write produced (:func:`poolboy.domain.conditions.observe`)."""
        self.flush_claim()
        generation = self.meta.get("generation")
        if self.decided and generation is not None:
            self.status["conditions"] = cond.observe(self.status.get("conditions"), self.decided, generation)
        if self.status != (self.claim.get("status") or {}):
            body = copy.deepcopy(self.claim)
            body["status"] = self.status
            self.claim = self.ctx.kube.replace_status(body)
        for reason, message, type_, action in self.events:
            self.ctx.kube.emit_event(self.claim, reason, message, type=type_, action=action)
        self.events.clear()
        # The bind is observed here, not by the handle reconciler: its Event on the handle is emitted here too
        # (Events are not status, so this does not break single-writer status ownership).
        for handle, reason, message in self.handle_events:
            self.ctx.kube.emit_event(handle, reason, message)
        self.handle_events.clear()

    def _synced_warning(self, synced: bool, reason: str, message: str) -> None:
        """Synced with reason and message, and a Warning Event only when that first appears or changes."""
        previous = cond.get_condition((self.claim.get("status") or {}).get("conditions"), "Synced") or {}
        self._condition("Synced", synced, reason, message)
        wanted = (cond.TRUE if synced else cond.FALSE, reason, message)
        if (previous.get("status"), previous.get("reason"), previous.get("message")) != wanted:
            self._event(reason, message, "Warning")

    def _synced_error(self, reason: str, message: str) -> None:
        """A user-fixable error: Synced=False, and a Warning Event when it first appears or changes."""
        self._synced_warning(False, reason, message)

    def fail(self, error: PermanentError) -> None:
        """Record a user-fixable error: Synced=False condition, status fields, an Event when the message changed."""
        self._synced_error(error.reason, error.message)
        self.write_status()
        error.recheck_after = self.ctx.settings.permanent_error_recheck

    def result(self) -> Result:
        providers = [self.provider] if self.provider is not None else self.providers
        future = [t for t in (*self.requeue, clock_rerun(self.ctx, providers)) if t and t > self.ctx.now]
        return Result(requeue_at=min(future) if future else None, enqueue=tuple(dict.fromkeys(self.enqueue)),
                      batch=tuple(dict.fromkeys(self.batch)))

    # -- the steps, in order --

    def process(self) -> Result:
        self.select_providers()
        self.check_providers()
        self.initialise()
        if self.provider_mode:
            if not self.approved():
                self.write_status()
                return self.result()
            self.evaluate_parameters()
        else:
            self.validate_resources()

        handle = binding.find_bound_handle(self.ctx, self.claim, recorded=self._known_handle())
        recorded = (self.status.get("resourceHandle") or {}).get("name")
        if handle is None and recorded:
            # The bound handle is gone or deleting: its deletion cascades to this claim; never rebind (§3.8).
            self._condition("Bound", False, "HandleDeleted", f"ResourceHandle {recorded} was deleted.")
            self._condition("Synced", True, "Synced", "")
            self.write_status()
            return self.result()
        if handle is None:
            handle = self.bind_or_create()
            if handle is None:
                self.write_status()
                return self.result()
        elif is_ignored(self.ctx, handle):
            # Poolboy writes nothing to an ignored handle and mirrors nothing from it, and autoDelete/autoDetach
            # wait until neither object is ignored (spec §3.1, §3.15); un-ignoring it re-runs this claim.
            self.write_status()
            return self.result()
        elif not recorded:
            self.record_binding(handle, "Bound", f"Adopted ResourceHandle {handle['metadata']['name']}")

        self.set_waiting(False)
        limits = self.handle_limits(handle)
        self.first_ready(handle, limits)
        handle = self.propagate(handle, limits)
        self.mirror(handle, limits)
        self.warn_before_end()
        if self.auto_delete_or_detach(handle):
            return Result(enqueue=(keys.make(keys.CLAIM, self.meta["namespace"], self.meta["name"]),
                                   keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"])))
        self.conclude(handle, limits)
        self.write_status()
        return self.result()

    # §3.2 provider selection

    def select_providers(self) -> None:
        has_provider = "provider" in self.spec and self.spec.get("provider") is not None
        has_resources = "resources" in self.spec and self.spec.get("resources") is not None
        if has_provider == has_resources:
            raise PermanentError("InvalidSpec", "Exactly one of spec.provider and spec.resources must be given.")
        if has_resources and not self.spec["resources"]:
            raise PermanentError("InvalidSpec", "spec.resources is empty: list at least one resource.")
        if has_provider:
            name = (self.spec["provider"] or {}).get("name")
            recorded = (self.status.get("provider") or {}).get("name")
            if recorded and name != recorded:
                raise PermanentError("InvalidSpec", f"spec.provider is immutable: {recorded} cannot be changed to "
                                                    f"{name}.")
            self.provider = Provider.get(self.ctx, name)
            self.status.setdefault("provider", {})["name"] = name
            self.apply_claim_metadata()
            return
        all_providers: list[Provider] | None = None
        for index, resource in enumerate(self.spec.get("resources") or []):
            provider_name = (resource.get("provider") or {}).get("name")
            if provider_name:
                self.providers.append(Provider.get(self.ctx, provider_name))
                continue
            if all_providers is None:
                all_providers = Provider.list_all(self.ctx)
            matches = matching.select_providers(resource.get("template") or {}, [p.obj for p in all_providers])
            if len(matches) != 1:
                what = "no ResourceProvider matches" if not matches else \
                    "more than one ResourceProvider matches (" + ", ".join(_names(matches)) + ")"
                raise PermanentError("NoProviderMatch" if not matches else "AmbiguousProviderMatch",
                                     f"spec.resources[{index}]: {what} the template.")
            self.providers.append(_as_provider(matches[0], all_providers))
        resources = [copy.deepcopy(r) for r in self.status.get("resources") or []]
        for index, provider in enumerate(self.providers):
            while len(resources) <= index:
                resources.append({})
            claim_name = (self.spec["resources"][index] or {}).get("name")
            if claim_name:
                resources[index]["name"] = claim_name
            resources[index]["provider"] = provider.ref
        self.status["resources"] = resources

    def check_providers(self) -> None:
        """``ProviderInvalid`` when a provider the claim uses, or one it links, has a broken spec: the administrator's
        mistake must not read as the user's (``ValidationFailed``) nor stall the claim without a word. A missing
        linked provider is left to the resource list, which reports ``ProviderNotFound``."""
        seen: set[str] = set()
        pending = list(self._all_providers())
        while pending:
            provider = pending.pop(0)
            if provider.name in seen:
                continue
            seen.add(provider.name)
            provider.ensure_valid()
            for link in provider.linked_resource_providers:
                linked = Provider.get_or_none(self.ctx, link.get("name") or "") if isinstance(link, dict) else None
                if linked is not None:
                    pending.append(linked)

    def apply_claim_metadata(self) -> None:
        """Provider mode: the provider's ``resourceClaimLabels/Annotations`` on the claim (§3.2)."""
        assert self.provider is not None
        patch: dict[str, Any] = {}
        for key, wanted in (("labels", self.provider.resource_claim_labels),
                            ("annotations", self.provider.resource_claim_annotations)):
            current = self.meta.get(key) or {}
            changed = {k: v for k, v in wanted.items() if current.get(k) != v}
            if changed:
                patch[key] = changed
        if patch:
            self._patch_claim({"metadata": patch})

    # §3.3 initialisation

    def initialise(self) -> None:
        annotation = self.ctx.label("resource-claim-init-timestamp")
        if annotation in (self.meta.get("annotations") or {}):
            return
        patch: dict[str, Any] = {"metadata": {"annotations": {annotation: timeutil.format_timestamp(self.ctx.now)}}}
        if not self.provider_mode:
            resources = []
            for index, (resource, provider) in enumerate(zip(self.spec.get("resources") or [], self.providers,
                                                             strict=False)):
                entry = copy.deepcopy(resource)
                entry["provider"] = provider.ref
                template = copy.deepcopy(entry.get("template") or {})
                default = provider.render_default(self.ctx, resource_claim=self.claim, resource_index=index,
                                                  resource_name=resource.get("name"))
                template = deep_merge(template, default or {}, overwrite=False)
                resource_schema = provider.validation.get("openAPIV3Schema")
                if resource_schema:
                    template = deep_merge(template, schema.defaults_from_schema(resource_schema) or {},
                                          overwrite=False)
                entry["template"] = template
                resources.append(entry)
            patch["spec"] = {"resources": resources}
        self._patch_claim(patch)

    # §3.6 approval

    def approved(self) -> bool:
        assert self.provider is not None
        if not self.provider.approval_required or (self.status.get("resourceHandle") or {}).get("name"):
            return True
        approval = self.status.get("approval") or {}
        if not approval.get("state"):
            self.status["approval"] = {"state": "pending", "message": self.provider.approval_pending_message}
            approval = self.status["approval"]
        if approval.get("state") == "approved":
            return True
        state = approval.get("state")
        reason = "ApprovalRejected" if state == "rejected" else "ApprovalPending"
        self._condition("Synced", False, reason, approval.get("message") or f"Approval {state}.")
        self._condition("Bound", False, reason, "Waiting for approval.")
        return False

    # §3.5 parameters

    def _context_variables(self, provider: Provider | None, handle: dict[str, Any] | None) -> dict[str, Any]:
        return {"resource_claim": templating.wrap_object(self.claim),
                "resource_handle": templating.wrap_object(handle) if handle is not None else None,
                "resource_provider": templating.wrap_object(provider.obj) if provider is not None else None}

    def _known_handle(self) -> dict[str, Any] | None:
        """The recorded handle, read once per run (validation, parameters and binding all look at it)."""
        name = (self.status.get("resourceHandle") or {}).get("name")
        if not name:
            return None
        if self._recorded_handle is None or self._recorded_handle[0] != name:
            self._recorded_handle = (name, self.ctx.kube.get_or_none(
                self.ctx.settings.api_version, HANDLE_KIND, name, self.ctx.settings.operator_namespace))
        return self._recorded_handle[1]

    def evaluate_parameters(self) -> None:
        assert self.provider is not None
        handle = self._known_handle()
        provider_status = self.status.setdefault("provider", {"name": self.provider.name})
        outcome = claim_parameters.evaluate(
            self.provider.parameters, (self.spec.get("provider") or {}).get("parameterValues"),
            provider_status.get("parameterValues"),
            context_variables=self._context_variables(self.provider, handle),
            template_vars=self.provider.template_vars(handle))
        if outcome.errors:
            if provider_status.get("validationErrors") != outcome.errors:
                provider_status["validationErrors"] = outcome.errors
            raise PermanentError("ValidationFailed", "; ".join(outcome.errors))
        provider_status.pop("validationErrors", None)
        provider_status["parameterValues"] = outcome.values
        if "resources" not in self.status:
            self.status["resources"] = [{"name": r["name"], "provider": r["provider"]}
                                        for r in self.resource_list()]

    def resource_list(self) -> list[dict[str, Any]]:
        assert self.provider is not None
        if self._resource_list is None:
            values = (self.status.get("provider") or {}).get("parameterValues") or {}
            self._resource_list = self.provider.resource_list(self.ctx, values, resource_claim=self.claim)
        return self._resource_list

    # §3.4 validation

    def validate_resources(self) -> None:
        handle = self._known_handle()
        failed: list[str] = []
        for index, (resource, provider) in enumerate(zip(self.spec.get("resources") or [], self.providers,
                                                         strict=False)):
            message = claim_validation.validate_template(
                resource.get("template"), provider.validation,
                context_variables=self._context_variables(provider, handle),
                template_vars=provider.template_vars(handle))
            entry = self.status["resources"][index]
            if message:
                entry["validationError"] = message
                failed.append(f"spec.resources[{index}]: {message}")
            else:
                entry.pop("validationError", None)
        if failed:
            raise PermanentError("ValidationFailed", "; ".join(failed))

    # §3.8 / §3.9 bind or create

    def _provider_spec(self) -> dict[str, Any] | None:
        if not self.provider_mode:
            return None
        return {"name": self.provider.name,  # type: ignore[union-attr]
                "parameterValues": copy.deepcopy((self.status.get("provider") or {}).get("parameterValues") or {})}

    def _claim_resources(self) -> list[dict[str, Any]]:
        """The claim's resources as the handle should have them: names, full provider refs, templates."""
        if self.provider_mode:
            return copy.deepcopy(self.resource_list())
        result = []
        for resource, provider in zip(self.spec.get("resources") or [], self.providers, strict=False):
            entry: dict[str, Any] = {"provider": provider.ref}
            if resource.get("name"):
                entry["name"] = resource["name"]
            if resource.get("template") is not None:
                entry["template"] = copy.deepcopy(resource["template"])
            result.append(entry)
        return result

    def _all_providers(self) -> list[Provider]:
        return [self.provider] if self.provider is not None else self.providers

    def bind_or_create(self) -> dict[str, Any] | None:
        self.flush_claim()  # the finalizer (and init) must be on the claim before a handle is bound or created
        claim_resources = self._claim_resources()
        handle = self._bind_indexed(claim_resources)
        if handle is _UNINDEXED:
            handle = self._bind_listed(claim_resources)
        if handle is not None:
            return handle
        if self.spec.get("disableCreation") or any(p.disable_creation for p in self._all_providers()):
            self.set_waiting(True)
            message, again = claim_waiting.update(self.ctx, self.claim, self.status, self._binding_scope()[1])
            self._condition("Bound", False, "NoMatchingHandle", message)
            self._condition("Synced", True, "Synced", "")
            self.requeue.append(again)
            return None
        return self._create(claim_resources)

    def _bind_listed(self, claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Rank every unbound handle listed from the API (or the cache) and bind the best that can be bound."""
        provider_names = [p.name for p in self._all_providers()]
        listed = [h for h in binding.list_unbound(self.ctx, self.claim)
                  if binding.provider_compatible(h, provider_names)]
        if not listed:
            return None
        providers = _providers_by_name(self.ctx, listed, self._all_providers())
        ranked = matching.rank_candidates(self.claim, listed, providers, self.ctx.now,
                                          domain=self.ctx.settings.domain, claim_resources=claim_resources)
        for candidate in ranked:
            handle = self._bind(candidate, claim_resources)
            if handle is not None:
                return handle
        return None

    def _bind_indexed(self, claim_resources: list[dict[str, Any]]) -> Any:
        """Warm binding from the engine's index (:mod:`poolboy.domain.candidates`): rank from summaries, reserve the
        best atomically, bind it with the usual conditional patch, release and go on when the bind loses.

        Returns the bound handle, None (no candidate, or older waiting claims come first), or ``_UNINDEXED`` when
        the index cannot answer."""
        index = self.ctx.index
        if index is None:
            return _UNINDEXED
        provider_names = [p.name for p in self._all_providers()]
        pool, scope = self._binding_scope()
        # a handle without resources or provider serves any claim: outside a pool, its scope is read alongside
        anywhere = () if pool else (candidate_index.claim_scope(None, ""),)
        summaries = index.summaries(scope, *anywhere)
        if summaries is None:
            return _UNINDEXED
        representatives: dict[str, dict[str, Any] | None] = {}  # read while ranking, reused once for the bind

        def fetch(name: str) -> dict[str, Any] | None:
            if name not in representatives:
                representatives[name] = self._read_handle(name)
            return representatives[name]

        ranked = candidate_index.rank(
            self.claim, summaries, fetch=fetch,
            providers=lambda handles: _providers_by_name(self.ctx, handles, self._all_providers()),
            now=self.ctx.now, domain=self.ctx.settings.domain, claim_resources=claim_resources)
        while ranked:
            reservation = index.reserve(scope, ranked, self.claim)
            if reservation.name is None:
                return None
            ranked = ranked[ranked.index(reservation.name) + 1:]
            candidate = representatives.pop(reservation.name) if reservation.name in representatives \
                else self._read_handle(reservation.name)
            handle = None
            if candidate is not None and candidate_index.is_unbound(candidate, self.ctx.settings.domain) \
                    and binding.provider_compatible(candidate, provider_names):
                handle = self._bind(candidate, claim_resources)
            if handle is not None:
                return handle
            index.release(reservation.name, self.claim)
        return None

    def _binding_scope(self) -> tuple[str | None, str]:
        """The claim's pool (``D/resource-pool-name`` annotation) and the binding scope it draws from."""
        provider_names = [p.name for p in self._all_providers()]
        pool = (self.meta.get("annotations") or {}).get(self.ctx.label("resource-pool-name"))
        return pool, candidate_index.claim_scope(pool, provider_names[0] if provider_names else "")

    def _read_handle(self, name: str) -> dict[str, Any] | None:
        return self.ctx.kube.get_or_none(self.ctx.settings.api_version, HANDLE_KIND, name,
                                         self.ctx.settings.operator_namespace)

    def set_waiting(self, waiting: bool) -> None:
        """Label a claim that waits for an unbound handle, so that a handle appearing enqueues it (§3.8)."""
        label = self.ctx.label(binding.WAITING_LABEL)
        if (label in (self.meta.get("labels") or {})) != waiting:
            self._patch_claim({"metadata": {"labels": {label: "true" if waiting else None}}})

    def _bind(self, candidate: dict[str, Any], claim_resources: list[dict[str, Any]]) -> dict[str, Any] | None:
        end = None
        raw_default = ((candidate.get("spec") or {}).get("lifespan") or {}).get("default")
        if raw_default:
            limits = claim_lifespan.handle_limits(candidate, self.claim, self._template_vars(candidate))
            if limits.default is not None:
                end = self.ctx.now + limits.default
        ops = binding.bind_ops(self.ctx, self.claim, candidate, provider_spec=self._provider_spec(),
                               claim_resources=claim_resources, lifespan_end=end)
        handle = binding.try_bind(self.ctx, candidate, ops)
        if handle is None:
            return None
        pool = (handle["metadata"].get("labels") or {}).get(self.ctx.label("resource-pool-name"))
        if pool:
            self.batch.append(keys.make(keys.POOL, self.ctx.settings.operator_namespace, pool))
        self.record_binding(handle, "Bound", f"Bound ResourceHandle {handle['metadata']['name']}")
        return handle

    def _create(self, claim_resources: list[dict[str, Any]]) -> dict[str, Any]:
        providers = self._all_providers()
        limit_list = [dataclasses.replace(p.lifespan_limits(self.ctx, resource_claim=self.claim),
                                          default_raw=p.lifespan.get("default"),
                                          maximum_raw=p.lifespan.get("maximum"),
                                          relative_maximum_raw=p.lifespan.get("relativeMaximum"))
                      for p in providers]
        limits = lifespan_rules.combine_limits(limit_list)
        requested = claim_lifespan.parse_optional((self.spec.get("lifespan") or {}).get("end"))
        spec_lifespan: dict[str, Any] = {}
        if limits.default is not None:
            spec_lifespan["default"] = timeutil.format_interval(limits.default)
        # maximum and relativeMaximum keep the provider's raw strings (templates are re-evaluated every reconcile)
        if limits.maximum is not None:
            spec_lifespan["maximum"] = limits.maximum_raw or timeutil.format_interval(limits.maximum)
        if limits.relative_maximum is not None:
            spec_lifespan["relativeMaximum"] = limits.relative_maximum_raw or \
                timeutil.format_interval(limits.relative_maximum)
        end = lifespan_rules.new_handle_end(requested, limits, self.ctx.now, self.ctx.now)
        if end is not None:
            spec_lifespan["end"] = timeutil.format_timestamp(end)
        annotations = {self.ctx.label(claim_lifespan.LIFESPAN_REQUEST_ANNOTATION):
                       claim_lifespan.lifespan_request(requested, limits)} if requested is not None else None
        handle, created = handle_factory.create_or_adopt(self.ctx, self.claim, provider_spec=self._provider_spec(),
                                                         resources=claim_resources, lifespan=spec_lifespan or None,
                                                         annotations=annotations)
        name = handle["metadata"]["name"]
        if created:
            self.record_binding(handle, "HandleCreated", f"Created ResourceHandle {name}")
        else:
            self.record_binding(handle, "Bound", f"Adopted ResourceHandle {name}")
        return handle

    def record_binding(self, handle: dict[str, Any], reason: str, message: str) -> None:
        """``status.resourceHandle`` and a fresh ``status.lifespan`` (start = the bind time, §3.8)."""
        self.status["resourceHandle"] = {"apiVersion": self.ctx.settings.api_version, "kind": HANDLE_KIND,
                                         "name": handle["metadata"]["name"],
                                         "namespace": handle["metadata"]["namespace"]}
        limits = claim_lifespan.handle_limits(handle, self.claim, self._template_vars(handle))
        self.status["lifespan"] = claim_lifespan.status_lifespan({}, handle, limits, start=self.ctx.now)
        self.status.pop("queue", None)
        self.enqueue.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))
        self._event(reason, message)
        self.handle_events.append((handle, "Bound", f"Bound to ResourceClaim {self.meta['namespace']}/"
                                                    f"{self.meta['name']}"))
        self._bound_now = True

    # §3.10 propagation

    def _template_vars(self, handle: dict[str, Any] | None) -> dict[str, Any]:
        if self.provider is not None:
            return self.provider.template_vars(handle)
        result: dict[str, Any] = {}
        for provider in self.providers:
            result.update(provider.vars)
        if handle is not None:
            result.update((handle.get("spec") or {}).get("vars") or {})
        return result

    def handle_limits(self, handle: dict[str, Any]) -> lifespan_rules.Limits:
        return claim_lifespan.handle_limits(handle, self.claim, self._template_vars(handle))

    def first_ready(self, handle: dict[str, Any], limits: lifespan_rules.Limits) -> None:
        """On first ready: record firstReady and reset the requested end to now + default (§3.11)."""
        status_lifespan = self.status.setdefault("lifespan", {})
        if (handle.get("status") or {}).get("ready") is not True or status_lifespan.get("firstReady"):
            return
        status_lifespan["firstReady"] = timeutil.format_timestamp(self.ctx.now)
        if limits.default is None:
            return
        start = claim_lifespan.parse_optional(status_lifespan.get("start"))
        first_ready = self.ctx.now
        maximum = lifespan_rules.maximum_end(start, first_ready, limits, self.ctx.now)
        try:
            new_end = lifespan_rules.first_ready_end((self.spec.get("lifespan") or {}).get("end"), start,
                                                     limits.default, self.ctx.now, maximum)
        except lifespan_rules.LifespanError as error:
            raise PermanentError("InvalidLifespan", str(error)) from error
        if new_end is not None:
            self._patch_claim({"spec": {"lifespan": {"end": timeutil.format_timestamp(new_end)}}})

    def propagate(self, handle: dict[str, Any], limits: lifespan_rules.Limits) -> dict[str, Any]:
        """Claim → handle spec (provider, resources, templates, requested end); one conditional JSON patch."""
        spec = handle.get("spec") or {}
        ops: list[dict[str, Any]] = []
        provider_spec = self._provider_spec()
        if provider_spec is not None:
            if spec.get("provider") != provider_spec:
                ops.append({"op": "add", "path": "/spec/provider", "value": provider_spec})
        elif "provider" in spec:
            ops.append({"op": "remove", "path": "/spec/provider"})
        if not self.provider_mode:
            resources = [copy.deepcopy(r) for r in spec.get("resources") or []]
            for index, claim_resource in enumerate(self._claim_resources()):
                if index >= len(resources):
                    resources.append(claim_resource)
                    continue
                if claim_resource.get("template") is not None:
                    merged = deep_merge(copy.deepcopy(resources[index].get("template") or {}),
                                        claim_resource["template"], overwrite=True)
                    resources[index]["template"] = merged
            if resources != (spec.get("resources") or []):
                ops.append({"op": "add", "path": "/spec/resources", "value": resources})
        # the claim uid annotation goes onto a handle bound before uids were kept
        wanted_annotations = binding.claim_uid_annotation(self.ctx, self.claim)
        requested = claim_lifespan.parse_optional((self.spec.get("lifespan") or {}).get("end"))
        if requested is not None:
            end, request = self._end_for_request(handle, requested, limits)
            wanted_annotations[self.ctx.label(claim_lifespan.LIFESPAN_REQUEST_ANNOTATION)] = request
            formatted = timeutil.format_timestamp(end)
            if (spec.get("lifespan") or {}).get("end") != formatted:
                if "lifespan" in spec:
                    ops.append({"op": "add", "path": "/spec/lifespan/end", "value": formatted})
                else:
                    ops.append({"op": "add", "path": "/spec/lifespan", "value": {"end": formatted}})
        annotations = handle["metadata"].get("annotations") or {}
        if any(annotations.get(k) != v for k, v in wanted_annotations.items()):
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {**annotations, **wanted_annotations}})
        if not ops:
            return handle
        ops.insert(0, {"op": "test", "path": "/metadata/resourceVersion",
                       "value": handle["metadata"]["resourceVersion"]})
        try:
            handle = self.ctx.kube.patch_json(self.ctx.settings.api_version, HANDLE_KIND, handle["metadata"]["name"],
                                              handle["metadata"]["namespace"], ops)
        except kube_errors.Invalid as error:  # the handle changed under us: recompute from fresh reads
            raise kube_errors.Conflict(409, "Conflict", f"handle changed during propagation: {error}") from error
        self.enqueue.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))
        return handle

    def _end_for_request(self, handle: dict[str, Any], requested: datetime,
                         limits: lifespan_rules.Limits) -> tuple[datetime, str]:
        """The handle end for the claim's requested end, clamped once (§3.10), and the inputs to record with it."""
        request = claim_lifespan.lifespan_request(requested, limits)
        recorded = (handle["metadata"].get("annotations") or {}).get(
            self.ctx.label(claim_lifespan.LIFESPAN_REQUEST_ANNOTATION))
        maximum = claim_lifespan.maximum_end(self._claim_with_status(), limits, self.ctx.now)
        current = claim_lifespan.parse_optional(((handle.get("spec") or {}).get("lifespan") or {}).get("end"))
        end = claim_lifespan.end_for_request(requested, maximum, current, recorded == request)
        if end != requested and end != current:
            log.info("claim %s/%s: requested end %s clamped to %s", self.meta["namespace"], self.meta["name"],
                     timeutil.format_timestamp(requested), timeutil.format_timestamp(end))
        return end, request

    def clamp_explanation(self, handle: dict[str, Any], limits: lifespan_rules.Limits) -> str | None:
        """The requested ``spec.lifespan.end`` against the end the handle got for it (§3.10 clamps it)."""
        return claim_lifespan.clamp_explanation(
            claim_lifespan.parse_optional((self.spec.get("lifespan") or {}).get("end")),
            claim_lifespan.parse_optional(((handle.get("spec") or {}).get("lifespan") or {}).get("end")), limits)

    def _claim_with_status(self) -> dict[str, Any]:
        return {**self.claim, "status": self.status}

    # §3.11 mirroring

    def mirror(self, handle: dict[str, Any], limits: lifespan_rules.Limits) -> None:
        previous_end = (self.status.get("lifespan") or {}).get("end")
        bound_now = self._bound_now
        self.status["lifespan"] = claim_lifespan.status_lifespan(self.status.get("lifespan"), handle, limits)
        if not self.status["lifespan"].get("start"):
            self.status["lifespan"]["start"] = timeutil.format_timestamp(self.ctx.now)
        new_end = self.status["lifespan"].get("end")
        if new_end != previous_end and not bound_now:
            if new_end:
                self._event("Lifespan end changed", f"Lifespan end changed from {previous_end or 'unset'} to "
                            f"{new_end}", action="LifespanChange")
            else:
                self._event("Lifespan end cleared", "Lifespan end cleared", action="LifespanChange")
        states = self.read_states(handle)
        self.status["resources"] = claim_status.mirror_resources(self.status.get("resources"), handle, states)
        claim_status.copy_aggregates(self.status, handle)
        end = claim_lifespan.parse_optional(new_end)
        if end is not None:
            self.requeue.append(end)
            if end <= self.ctx.now:  # the handle outlived its end (its expiry waited while this claim was ignored)
                self.enqueue.append(keys.make(keys.HANDLE, handle["metadata"]["namespace"], handle["metadata"]["name"]))

    def warn_before_end(self) -> None:
        """A Warning Event and ``status.lifespan.warnings`` at the configured lead times before the lifespan end,
        and the next lead time as a deadline (:mod:`poolboy.domain.lifespan_warnings`)."""
        status_lifespan = self.status.get("lifespan") or {}
        end = claim_lifespan.parse_optional(status_lifespan.get("end"))
        decision = lifespan_warnings.decide(end, self.ctx.now, self.ctx.settings.lifespan_warning_leads,
                                            status_lifespan.get("warnings"),
                                            claim_lifespan.parse_optional(status_lifespan.get("firstReady")
                                                                          or status_lifespan.get("start")))
        if decision.record:
            self.status.setdefault("lifespan", {})["warnings"] = decision.record
        else:
            status_lifespan.pop("warnings", None)
        if decision.announce is not None and end is not None:
            self._event(lifespan_warnings.REASON, lifespan_warnings.message(end, decision.announce), "Warning")
        if decision.next_at is not None:
            self.requeue.append(decision.next_at)
        if decision.ending or cond.get_condition(self.status.get("conditions"), lifespan_warnings.CONDITION):
            self._condition(lifespan_warnings.CONDITION, *lifespan_warnings.condition(end, decision.ending))

    def read_states(self, handle: dict[str, Any]) -> dict[int, dict[str, Any] | None]:
        """The live managed resources, read fresh and pruned (never from an event payload)."""
        states: dict[int, dict[str, Any] | None] = {}
        for index, entry in enumerate((handle.get("status") or {}).get("resources") or []):
            reference = entry.get("reference") or {}
            if not reference.get("name") or not reference.get("apiVersion") or not reference.get("kind"):
                continue
            try:
                live = self.ctx.kube.get_or_none(reference["apiVersion"], reference["kind"], reference["name"],
                                                 reference.get("namespace"))
            except kube_errors.ApiMissing:
                live = None
            states[index] = claim_status.prune_state(live, self.ctx.settings.domain) if live is not None else None
        return states

    # §3.15 autoDelete / autoDetach

    def _auto_condition(self, key: str, handle: dict[str, Any]) -> bool:
        when = (self.spec.get(key) or {}).get("when")
        if not when:
            return False
        claim = self._claim_with_status()
        variables = {**self._context_variables(self.provider, handle), "resource_claim": templating.wrap_object(claim),
                     "metadata": claim.get("metadata"), "spec": claim.get("spec"), "status": self.status}
        try:
            return bool(templating.check(when, variables, self._template_vars(handle)))
        except Exception as error:
            log.warning("claim %s/%s %s.when failed: %s", self.meta["namespace"], self.meta["name"], key, error)
            return False

    def auto_delete_or_detach(self, handle: dict[str, Any]) -> bool:
        if self._auto_condition("autoDelete", handle):
            self._event("AutoDelete", "autoDelete condition is true; deleting the claim")
            self.write_status()
            self.ctx.kube.delete_if_exists(self.ctx.settings.api_version, CLAIM_KIND, self.meta["name"],
                                           self.meta["namespace"])
            return True
        if self._auto_condition("autoDetach", handle):
            self.status["resourceHandle"]["detached"] = True
            self._condition("Bound", False, "Detached", f"Detached from ResourceHandle {handle['metadata']['name']}.")
            self._event("Detached", f"autoDetach condition is true; deleting ResourceHandle "
                                    f"{handle['metadata']['name']}")
            self.write_status()
            self.ctx.kube.delete_if_exists(self.ctx.settings.api_version, HANDLE_KIND, handle["metadata"]["name"],
                                           handle["metadata"]["namespace"])
            return True
        return False

    # §12 conditions

    def conclude(self, handle: dict[str, Any], limits: lifespan_rules.Limits) -> None:
        handle_status = handle.get("status") or {}
        handle_synced = cond.get_condition(handle_status.get("conditions"), "Synced") or {}
        if handle_synced.get("status") == cond.FALSE:
            # A user-fixable error met while creating the resources (template error, a definition without
            # apiVersion/kind, a missing API) is found by the handle reconciler, but the claim is all the user can
            # see: surface it here, with an Event in the user's namespace. It clears once the handle is in sync.
            self._synced_error(handle_synced.get("reason") or "ResourceError", handle_synced.get("message") or "")
        elif clamped := self.clamp_explanation(handle, limits):
            # processed, but not as asked: the user's requested end was cut to the provider's maximum
            self._synced_warning(True, "LifespanClamped", clamped)
        else:
            self._condition("Synced", True, "Synced", "")
        self._condition("Bound", True, "Bound", f"Bound to ResourceHandle {handle['metadata']['name']}.")
        ready, reason, message = claim_status.ready_condition(handle_status)
        self._condition("Ready", ready if ready is not None else False, reason, message)
        healthy, reason, message = claim_status.healthy_condition(handle_status)
        self._condition("Healthy", healthy, reason, message)


# --- provider adapters for the pure matching helpers --------------------------------------------------------------


def _names(matches: list[Any]) -> list[str]:
    return [m.name if isinstance(m, Provider) else m["metadata"]["name"] for m in matches]


def _as_provider(match: Any, all_providers: list[Provider]) -> Provider:
    if isinstance(match, Provider):
        return match
    name = match["metadata"]["name"]
    return next(p for p in all_providers if p.name == name)


def _providers_by_name(ctx: Context, handles: list[dict[str, Any]], known: list[Provider]) -> dict[str, Any]:
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


__all__ = ["ProviderNotFound", "reconcile"]

"""ResourceHandle reconciler (docs/behaviour.md#handles, #health, #deletion): creates and updates the managed resources
of a handle and computes its health, readiness and summary.

Order (docs/behaviour.md#handles): expiry → provider-mode regeneration of ``spec.resources`` → ``status.resources``
shape → per resource (claim requirement, linked waits, render, record reference, create/update) → status → enqueue the
claim. A reference is made durable in status BEFORE the resource is created (with an rv precondition), so that a
deletion that starts meanwhile either fails our write (and we re-read and clean up) or sees the reference: a
resource is never created without its handle knowing it.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import binding, conditions, health, linked, managed_resources
from poolboy.domain.object_meta import is_ignored
from poolboy.domain.provider import Provider, clock_rerun
from poolboy.domain.requester import Requester, get_requester
from poolboy.reconcilers import preamble
from poolboy.result import PermanentError, Result
from poolboy.utils import templating, timeutil
from poolboy.utils.merge import deep_merge

log = logging.getLogger(__name__)

KIND = "ResourceHandle"
WAITING_FOR_CLAIM = "ResourceClaim"


def reconcile(ctx: Context, namespace: str, name: str) -> Result:
    return preamble.reconcile_object(ctx, KIND, namespace, name, live=_live, deleting=_cleanup)


# --- small helpers -----------------------------------------------------------------------------------------------


def _claim_key(handle: dict[str, Any]) -> str | None:
    claim = (handle.get("spec") or {}).get("resourceClaim")
    return keys.make(keys.CLAIM, claim["namespace"], claim["name"]) if claim else None


def _pool_key(ctx: Context, handle: dict[str, Any]) -> str | None:
    pool = (handle.get("spec") or {}).get("resourcePool")
    if pool and pool.get("name"):
        return keys.make(keys.POOL, pool.get("namespace") or ctx.settings.operator_namespace, pool["name"])
    name = (handle["metadata"].get("labels") or {}).get(ctx.label("resource-pool-name"))
    return keys.make(keys.POOL, ctx.settings.operator_namespace, name) if name else None


def _keys(*candidates: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(k for k in candidates if k))


class _Providers:
    """Per-reconcile provider cache: each provider is read once per reconcile, fresh from the API."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cache: dict[str, Provider] = {}

    def __call__(self, name: str) -> Provider:
        if name not in self.cache:
            self.cache[name] = Provider.get(self.ctx, name)
        return self.cache[name]


# --- deletion ----------------------------------------------------------------------------------------------------


def _references(handle: dict[str, Any]) -> list[dict[str, Any]]:
    found: dict[tuple, dict[str, Any]] = {}
    entries = list((handle.get("status") or {}).get("resources") or []) + \
        list((handle.get("spec") or {}).get("resources") or [])
    for entry in entries:
        ref = entry.get("reference") if isinstance(entry, dict) else None
        if ref and ref.get("name") and ref.get("kind") and ref.get("apiVersion"):
            found.setdefault((ref["apiVersion"], ref["kind"], ref.get("namespace"), ref["name"]), ref)
    return list(found.values())


def describe_reference(ref: dict[str, Any]) -> str:
    """``Kind namespace/name`` (or ``Kind name`` when cluster-scoped), as Event messages name a resource."""
    where = f"{ref['namespace']}/{ref['name']}" if ref.get("namespace") else ref.get("name")
    return f"{ref.get('kind')} {where}"


def _delete_resource(ctx: Context, ref: dict[str, Any]) -> bool:
    """Annotate ``D/resource-handle-deleted`` first (so its events are ignored), then delete; 404 is fine.

    Returns whether this call deleted an existing resource, so a cleanup that is repeated (its finalizer removal
    conflicted) does not emit its ``ResourceDeleted`` Events twice."""
    try:
        ctx.kube.patch_merge(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"),
                             {"metadata": {"annotations": {
                                 ctx.label("resource-handle-deleted"): timeutil.format_timestamp(ctx.now)}}})
        return ctx.kube.delete_if_exists(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"))
    except (kube.NotFound, kube.ApiMissing):
        return False


def _delete_bound_claim(ctx: Context, handle: dict[str, Any]) -> None:
    ref = (handle.get("spec") or {}).get("resourceClaim")
    if not ref:
        return
    claim = ctx.kube.get_or_none(ref.get("apiVersion") or ctx.settings.api_version, "ResourceClaim", ref["name"],
                                 ref["namespace"])
    if claim is None or claim["metadata"].get("deletionTimestamp") or not binding.bound_to(ctx, handle, claim):
        return  # gone, going, or a claim recreated under the same name (another object: never ours to delete)
    if is_ignored(ctx, claim):
        # Poolboy writes nothing to an ignored object, deletion included (docs/behaviour.md#triggers-and-finalizers)
        return
    status_handle = (claim.get("status") or {}).get("resourceHandle") or {}
    if status_handle.get("detached"):
        return
    if status_handle.get("name") and status_handle["name"] != handle["metadata"]["name"]:
        return  # a recreated claim with its own handle
    ctx.kube.delete_if_exists(claim["apiVersion"], "ResourceClaim", ref["name"], ref["namespace"],
                              uid=claim["metadata"].get("uid"),
                              resource_version=claim["metadata"].get("resourceVersion"))


def _cleanup(ctx: Context, handle: dict[str, Any]) -> preamble.Cleaned:
    """docs/behaviour.md#deletion: resources, then the bound claim (unless detached); the preamble then removes the
    finalizer. The pool and the claim look again."""
    for ref in _references(handle):
        if _delete_resource(ctx, ref):
            ctx.kube.emit_event(handle, "ResourceDeleted", f"Deleted {describe_reference(ref)}")
    _delete_bound_claim(ctx, handle)
    return preamble.Cleaned(Result(enqueue=_keys(_pool_key(ctx, handle), _claim_key(handle))))


def _delete_handle(ctx: Context, handle: dict[str, Any], reason: str, message: str) -> Result:
    metadata = handle["metadata"]
    ctx.kube.emit_event(handle, reason, message)
    ctx.kube.delete_if_exists(handle["apiVersion"], KIND, metadata["name"], metadata["namespace"],
                              uid=metadata.get("uid"), resource_version=metadata.get("resourceVersion"))
    return Result(enqueue=_keys(keys.make(keys.HANDLE, metadata["namespace"], metadata["name"]),
                                _pool_key(ctx, handle), _claim_key(handle)))


# --- provider mode -----------------------------------------------------------------------------------------------


def _merge_generated(ctx: Context, handle: dict[str, Any], existing: list[dict[str, Any]],
                     generated: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = [copy.deepcopy(r) for r in existing]
    for index, entry in enumerate(generated):
        if index >= len(result):
            result.append(copy.deepcopy(entry))
            continue
        current = result[index]
        old_provider = (current.get("provider") or {}).get("name")
        if old_provider and old_provider != entry["provider"]["name"]:
            log.warning("handle %s resource %d: refusing provider change %s -> %s", handle["metadata"]["name"],
                        index, old_provider, entry["provider"]["name"])
            continue
        current.setdefault("provider", entry["provider"])
        if "template" in entry:
            current["template"] = copy.deepcopy(entry["template"])
        if not current.get("name") and entry.get("name"):
            current["name"] = entry["name"]
    return result


def _regenerate(ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None,
                providers: _Providers) -> dict[str, Any]:
    """Provider mode: ``spec.resources`` follow the provider's resource list for the handle's parameters."""
    spec = handle.get("spec") or {}
    provider_spec = spec.get("provider")
    if not provider_spec:
        return handle
    provider = providers(provider_spec["name"])
    values = provider_spec.get("parameterValues") or {}
    effective = provider.effective_parameter_values(values, resource_claim=claim, resource_handle=handle)
    generated = provider.resource_list(ctx, effective, resource_claim=claim, resource_handle=handle)
    existing = spec.get("resources") or []
    resources = _merge_generated(ctx, handle, existing, generated)
    patch: dict[str, Any] = {}
    if resources != existing:
        patch["resources"] = resources
    if effective != values:  # persist rendered defaults so random defaults stay stable
        patch["provider"] = {"parameterValues": effective}
    if not patch:
        return handle
    metadata = handle["metadata"]
    return ctx.kube.patch_merge(handle["apiVersion"], KIND, metadata["name"], metadata["namespace"],
                                {"spec": patch}, resource_version=metadata["resourceVersion"])


# --- status ------------------------------------------------------------------------------------------------------


def _write_status(ctx: Context, handle: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Replace the status with an rv precondition, only when it changed; returns the current handle."""
    if status == (handle.get("status") or {}):
        return handle
    body = copy.deepcopy(handle)
    body["status"] = status
    return ctx.kube.replace_status(body)


def _status_resources(handle: dict[str, Any]) -> list[dict[str, Any]]:
    """``status.resources`` shaped like ``spec.resources`` (length and names), keeping what is recorded."""
    spec_resources = (handle.get("spec") or {}).get("resources") or []
    old = (handle.get("status") or {}).get("resources") or []
    result = []
    for index, resource in enumerate(spec_resources):
        entry = copy.deepcopy(old[index]) if index < len(old) and isinstance(old[index], dict) else {}
        if resource.get("name"):
            entry["name"] = resource["name"]
        else:
            entry.pop("name", None)
        result.append(entry)
    return result


def _set_conditions(ctx: Context, status: dict[str, Any], handle: dict[str, Any],
                    error: PermanentError | None) -> None:
    generation = handle["metadata"].get("generation")
    current = status.get("conditions")
    if error is not None:
        current = conditions.set_condition(current, "Synced", False, error.reason, error.message, ctx.now, generation)
    else:
        current = conditions.set_condition(current, "Synced", True, "Synced", "Resources are in sync.", ctx.now,
                                           generation)
        ready = status.get("ready")
        current = conditions.set_condition(
            current, "Ready", ready, {True: "ResourcesReady", False: "NotReady", None: "Unknown"}[ready],
            {True: "All resources are ready.", False: "Some resources are not ready.",
             None: "Readiness is not known."}[ready], ctx.now, generation)
        healthy = status.get("healthy")
        current = conditions.set_condition(
            current, "Healthy", healthy, {True: "ResourcesHealthy", False: "Unhealthy", None: "Unknown"}[healthy],
            {True: "All resources are healthy.", False: "Some resources are unhealthy.",
             None: "Health is not known."}[healthy], ctx.now, generation)
    status["conditions"] = current


# --- managed resources -------------------------------------------------------------------------------------------


class _Run:
    """State of one handle reconcile: handle, claim, providers, live states, status being built."""

    def __init__(self, ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None,
                 providers: _Providers) -> None:
        self.ctx = ctx
        self.handle = handle
        self.claim = claim
        self.providers = providers
        self.resources: list[dict[str, Any]] = (handle.get("spec") or {}).get("resources") or []
        self.status = copy.deepcopy(handle.get("status") or {})
        self.status_resources = _status_resources(handle)
        self.states: list[dict[str, Any] | None] = [managed_resources.read_live(ctx, e.get("reference"))
                                                    for e in self.status_resources]
        self._requester: Requester | None = None
        self.wrote_resources = False  # a managed resource was created or patched in the current pass
        self.run_again = False  # still changing after the passes of this run: the handle must run once more

    @property
    def requester(self) -> Requester:
        if self._requester is None:
            claim_ref = (self.handle.get("spec") or {}).get("resourceClaim")
            self._requester = get_requester(self.ctx, claim_ref["namespace"]) if claim_ref else Requester()
        return self._requester

    def override_variables(self, index: int, provider: Provider, link_vars: dict[str, Any]) -> dict[str, Any]:
        resource = self.resources[index]
        return {
            **link_vars,
            "guid": managed_resources.handle_guid(self.handle),
            **self.requester.variables(),
            "resource_claim": templating.wrap_object(self.claim) if self.claim else None,
            "resource_handle": templating.wrap_object(self.handle),
            "resource_provider": templating.wrap_object(provider.obj),
            "resource_index": index,
            "resource_name": resource.get("name"),
            "resource_reference": self.status_resources[index].get("reference"),
            "resource_references": [e.get("reference") for e in self.status_resources],
            "resource_state": self.states[index],
            "resource_states": list(self.states),
            "resource_template": resource.get("template") or {},
            "resource_templates": [r.get("template") or {} for r in self.resources],
        }

    def definition(self, index: int, provider: Provider, link_vars: dict[str, Any]) -> dict[str, Any]:
        template = copy.deepcopy(self.resources[index].get("template") or {})
        override = provider.render_override(self.ctx, self.override_variables(index, provider, link_vars),
                                            provider.template_vars(self.handle))
        definition = deep_merge(template, override)
        if not isinstance(definition, dict) or not definition.get("apiVersion") or not definition.get("kind"):
            raise PermanentError("InvalidDefinition", f"Resource {index} definition has no apiVersion or kind")
        return definition

    def write_status(self) -> None:
        self.status["resources"] = self.status_resources
        self.handle = _write_status(self.ctx, self.handle, self.status)
        self.status = copy.deepcopy(self.handle.get("status") or {})
        self.status_resources = copy.deepcopy(self.status.get("resources") or [])

    def manage(self, index: int) -> None:
        resource = self.resources[index]
        entry = self.status_resources[index]
        provider = self.providers((resource.get("provider") or {}).get("name") or "")
        recorded = entry.get("reference")
        bound = bool((self.handle.get("spec") or {}).get("resourceClaim"))
        if not recorded and provider.resource_requires_claim and not bound:
            entry["waitingFor"] = WAITING_FOR_CLAIM
            return
        outcome = linked.evaluate_links(provider, index, self.resources, self.states, get_provider=self.providers,
                                        resource_claim=self.claim, resource_handle=self.handle,
                                        template_vars=provider.template_vars(self.handle))
        if not recorded and outcome.waiting:
            entry["waitingFor"] = linked.WAITING_FOR_LINKED
            return
        definition = self.definition(index, provider, outcome.template_vars)
        managed_resources.check_api(self.ctx, definition["apiVersion"], definition["kind"])
        if recorded:
            managed_resources.enforce_reference(definition, recorded, index)
        else:
            managed_resources.apply_name(definition, index, managed_resources.handle_guid(self.handle))
        annotations = managed_resources.poolboy_annotations(self.ctx, self.handle, provider.name, index,
                                                            self.requester.annotations(self.ctx))
        managed_resources.apply_metadata(definition, annotations, self.handle)
        if not recorded:
            entry["reference"] = managed_resources.reference_of(definition)
            entry.pop("waitingFor", None)
            self.write_status()  # durable before create; Conflict here re-runs the reconcile
        self.status_resources[index].pop("waitingFor", None)
        before = self.states[index]
        self.states[index] = managed_resources.create_or_update(self.ctx, definition, provider.update_filters,
                                                                before, on_created=self.created)
        if _version(self.states[index]) != _version(before):
            self.wrote_resources = True

    def manage_all(self) -> None:
        """Create or update every resource; again while a pass wrote any.

        A definition can read the live state of another resource (linked ``waitFor``/``templateVars``, a later
        index included) or its own; the watch events of this run's own writes do not run the handle again
        (:mod:`workers.own_writes`), so the run itself converges. A pass that changes nothing costs no API request
        (states are in memory). A chain of N linked resources settles in at most N writing passes; still writing
        after N + 1 passes (a definition that keeps changing), ``run_again`` asks for one more run.
        """
        for _ in range(len(self.resources) + 1):
            self.wrote_resources = False
            for index in range(len(self.resources)):
                self.manage(index)
            if not self.wrote_resources:
                return
        self.run_again = True

    def created(self, resource: dict[str, Any]) -> None:
        """A managed resource was created by this run (not adopted): a ``ResourceCreated`` Event on the handle."""
        metadata = resource.get("metadata") or {}
        ref = {"kind": resource.get("kind"), "name": metadata.get("name"), "namespace": metadata.get("namespace")}
        self.ctx.kube.emit_event(self.handle, "ResourceCreated", f"Created {describe_reference(ref)}")

    def compute_health(self) -> None:
        healthies: list[bool | None] = []
        readies: list[bool | None] = []
        for index, resource in enumerate(self.resources):
            entry = self.status_resources[index]
            provider = self.providers((resource.get("provider") or {}).get("name") or "")
            healthy, ready = health.resource_health(provider.health_check, provider.readiness_check,
                                                    self.states[index], self.handle,
                                                    provider.template_vars(self.handle))
            for key, value in (("healthy", healthy), ("ready", ready)):
                if value is None:
                    entry.pop(key, None)
                else:
                    entry[key] = value
            healthies.append(healthy)
            readies.append(ready)
        for key, value in (("healthy", health.aggregate(healthies)), ("ready", health.aggregate(readies))):
            if value is None:
                self.status.pop(key, None)
            else:
                self.status[key] = value
        self.compute_summary()

    def compute_summary(self) -> None:
        spec = self.handle.get("spec") or {}
        provider_name = (spec.get("provider") or {}).get("name") or \
            ((self.resources[-1].get("provider") or {}).get("name") if self.resources else None)
        summary = None
        if provider_name:
            provider = self.providers(provider_name)
            resources = [{**copy.deepcopy(r), "state": self.states[i]} for i, r in enumerate(self.resources)]
            summary = health.render_summary(provider.status_summary_template,
                                            (spec.get("provider") or {}).get("parameterValues"), self.handle,
                                            resources, provider.template_vars(self.handle))
        if summary is None:
            self.status.pop("summary", None)
        else:
            self.status["summary"] = summary


# --- the reconcile -----------------------------------------------------------------------------------------------


def _version(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("resourceVersion")


def _read_claim(ctx: Context, handle: dict[str, Any]) -> dict[str, Any] | None:
    """The bound claim, or None when it is gone, including when a new claim now has its name (another uid)."""
    ref = (handle.get("spec") or {}).get("resourceClaim")
    if not ref:
        return None
    claim = ctx.kube.get_or_none(ref.get("apiVersion") or ctx.settings.api_version, "ResourceClaim", ref["name"],
                                 ref["namespace"])
    return claim if claim is not None and binding.bound_to(ctx, handle, claim) else None


def _claim_expired_event(ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None, end: str) -> None:
    """The user sees the claim, not the handle: tell it why it is about to be deleted (before the cascade).

    Only a claim that this handle's deletion will delete gets it: live, not detached, and bound to this handle."""
    if claim is None or claim["metadata"].get("deletionTimestamp"):
        return
    recorded = (claim.get("status") or {}).get("resourceHandle") or {}
    if recorded.get("detached") or (recorded.get("name") and recorded["name"] != handle["metadata"]["name"]):
        return
    ctx.kube.emit_event(claim, "Expired", f"Lifespan end {end} has passed; deleting ResourceHandle "
                                          f"{handle['metadata']['name']} and this claim.")


def _expiry(ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None) -> Result | None:
    spec = handle.get("spec") or {}
    end = (spec.get("lifespan") or {}).get("end")
    if end:
        try:
            if timeutil.parse_timestamp(end) <= ctx.now:
                _claim_expired_event(ctx, handle, claim, end)
                return _delete_handle(ctx, handle, "Expired", f"Lifespan end {end} has passed.")
        except ValueError:
            log.warning("handle %s: unparsable lifespan end %r", handle["metadata"]["name"], end)
    if spec.get("resourceClaim") and claim is None:
        return _delete_handle(ctx, handle, "ClaimDeleted", "The bound ResourceClaim no longer exists.")
    return None


def _requeue_at(handle: dict[str, Any]) -> Any:
    end = ((handle.get("spec") or {}).get("lifespan") or {}).get("end")
    try:
        return timeutil.parse_timestamp(end) if end else None
    except ValueError:
        return None


def _record_error(ctx: Context, run: _Run, error: PermanentError) -> None:
    previous = conditions.get_condition((run.handle.get("status") or {}).get("conditions"), "Synced") or {}
    run.status["resources"] = run.status_resources
    _set_conditions(ctx, run.status, run.handle, error)
    run.handle = _write_status(ctx, run.handle, run.status)
    if previous.get("message") != error.message:
        ctx.kube.emit_event(run.handle, error.reason, error.message, type="Warning")


def _live(ctx: Context, handle: dict[str, Any]) -> Result:
    namespace, name = handle["metadata"]["namespace"], handle["metadata"]["name"]
    read_version = _version(handle)
    claim = _read_claim(ctx, handle)
    if is_ignored(ctx, claim):
        # even expiry waits: it would delete the ignored claim (docs/behaviour.md#triggers-and-finalizers); resuming
        # runs it again
        return Result()
    expired = _expiry(ctx, handle, claim)
    if expired is not None:
        return expired
    providers = _Providers(ctx)
    old_status = handle.get("status") or {}
    run: _Run | None = None
    try:
        handle = _regenerate(ctx, handle, claim, providers)
        run = _Run(ctx, handle, claim, providers)
        run.manage_all()
        run.compute_health()
    except PermanentError as error:
        run = run or _Run(ctx, handle, claim, providers)
        _record_error(ctx, run, error)
        raise PermanentError(error.reason, error.message, error.recheck_after,
                             enqueue=_keys(_claim_key(handle))) from error
    run.status["resources"] = run.status_resources
    _set_conditions(ctx, run.status, run.handle, None)
    changed = run.status != (run.handle.get("status") or {}) or run.status != old_status
    run.handle = _write_status(ctx, run.handle, run.status)
    waiting: tuple[str, ...] = ()
    unbound = not (run.handle.get("spec") or {}).get("resourceClaim")
    if changed and unbound:
        waiting = binding.waiting_claim_keys(ctx)  # an unbound handle appeared or changed: waiting claims look again
    # Only an unbound handle counts in its pool (its status lists unbound handles); the bind itself enqueues the
    # pool, so a bound handle's later status changes (resource created, ready) need no pool run, each of which
    # lists every unbound handle of the pool.
    again = keys.make(keys.HANDLE, namespace, name) if run.run_again else None
    # The claim mirrors this handle's status and (itself, from the watch) its resources' states: it needs a run
    # only when this run changed the handle. A resync of an unchanged handle costs its claim nothing.
    handle_changed = changed or _version(run.handle) != read_version
    enqueue = _keys(_claim_key(run.handle) if handle_changed else None, *waiting, again)
    next_runs = [t for t in (_requeue_at(run.handle), clock_rerun(ctx, providers.cache.values())) if t]
    return Result(requeue_at=min(next_runs) if next_runs else None, enqueue=enqueue,
                  batch=_keys(_pool_key(ctx, run.handle) if changed and unbound else None))


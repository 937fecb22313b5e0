"""One handle reconcile over its managed resources (docs/behaviour.md#handles, #health): create or update each one
(claim requirement, linked waits, render, record the reference, create/update), then their health, readiness and
summary."""

from __future__ import annotations

import copy
from typing import Any

from poolboy.context import Context
from poolboy.domain import health, linked, managed_resources, ownership
from poolboy.domain.provider import Provider
from poolboy.domain.requester import Requester, get_requester
from poolboy.kinds import RESOURCE_CLAIM
from poolboy.reconcilers.handle.names import claim_key, describe_reference
from poolboy.reconcilers.handle.status import status_resources, write_status
from poolboy.result import PermanentError
from poolboy.utils import templating
from poolboy.utils.merge import deep_merge, merge_patch


def resource_version(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("resourceVersion")


class Providers:
    """Per-reconcile provider cache: each provider is read once per reconcile, fresh from the API."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cache: dict[str, Provider] = {}

    def __call__(self, name: str) -> Provider:
        if name not in self.cache:
            self.cache[name] = Provider.get(self.ctx, name)
        return self.cache[name]


class HandleRun:
    """State of one handle reconcile: handle, claim, providers, live states, status being built."""

    def __init__(self, ctx: Context, handle: dict[str, Any], claim: dict[str, Any] | None,
                 providers: Providers) -> None:
        self.ctx = ctx
        self.handle = handle
        self.claim = claim
        self.providers = providers
        self.resources: list[dict[str, Any]] = (handle.get("spec") or {}).get("resources") or []
        self.guid = managed_resources.handle_guid(handle)
        self.status = copy.deepcopy(handle.get("status") or {})
        self.status_resources = status_resources(handle)
        self.states: list[dict[str, Any] | None] = [self.read_state(e.get("reference"))
                                                    for e in self.status_resources]
        self._requester: Requester | None = None
        self.wrote_resources = False  # a managed resource was created or patched in the current pass
        self.run_again = False  # still changing after the passes of this run: the handle must run once more
        #: while the handle is on standby, the standby patch of each resource, merged into what it renders
        self.standby_patches: dict[int, dict[str, Any]] = {}

    def read_state(self, reference: dict[str, Any] | None) -> dict[str, Any] | None:
        """The live resource at ``reference`` when this handle may manage it; another's object is no state of
        ours (its contents must reach neither a template nor a status) and meets its conflict when created."""
        live = managed_resources.read_live(self.ctx, reference)
        if live is None or ownership.may_manage(self.ctx.settings.domain, self.handle, live):
            return live
        return None

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
        definition = merge_patch(deep_merge(template, override), self.standby_patches.get(index) or {})
        if not isinstance(definition, dict) or not definition.get("apiVersion") or not definition.get("kind"):
            raise PermanentError("InvalidDefinition", f"Resource {index} definition has no apiVersion or kind")
        return definition

    def write_status(self) -> None:
        self.status["resources"] = self.status_resources
        self.handle = write_status(self.ctx, self.handle, self.status)
        self.status = copy.deepcopy(self.handle.get("status") or {})
        self.status_resources = copy.deepcopy(self.status.get("resources") or [])

    def manage(self, index: int) -> None:
        resource = self.resources[index]
        entry = self.status_resources[index]
        provider = self.providers((resource.get("provider") or {}).get("name") or "")
        recorded = entry.get("reference")
        bound = bool((self.handle.get("spec") or {}).get("resourceClaim"))
        if not recorded and provider.resource_requires_claim and not bound:
            entry["waitingFor"] = RESOURCE_CLAIM
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
            managed_resources.apply_name(definition, index, self.guid)
        annotations = managed_resources.poolboy_annotations(self.ctx, self.handle, provider.name, index,
                                                            self.requester.annotations(self.ctx))
        managed_resources.apply_metadata(definition, annotations, self.handle)
        if not recorded:
            entry["reference"] = managed_resources.reference_of(definition)
            entry.pop("waitingFor", None)
            if not managed_resources.name_is_reproducible(definition, self.guid):
                self.write_status()  # durable before create; Conflict here re-runs the reconcile
        self.status_resources[index].pop("waitingFor", None)
        before = self.states[index]
        claim = claim_key(self.handle)
        # the write's watch event would run the claim before this run's status says what it wrote
        promise = (lambda: self.ctx.will_wake(claim)) if claim is not None else None
        try:
            self.states[index] = managed_resources.create_or_update(self.ctx, definition, provider.update_filters,
                                                                    before, self.handle, on_created=self.created,
                                                                    before_write=promise)
        except PermanentError as error:
            if error.reason == ownership.CONFLICT:
                self.status_resources[index].pop("reference", None)  # never mirrored, never deleted: not ours
            raise
        if resource_version(self.states[index]) != resource_version(before):
            self.wrote_resources = True

    def manage_all(self) -> None:
        """Create or update every resource; again while a pass wrote any.

        A definition can read the live state of another resource (linked ``waitFor``/``templateVars``, a later
        index included) or its own; the watch events of this run's own writes do not run the handle again
        (:mod:`engine.own_writes`), so the run itself converges. A pass that changes nothing costs no API request
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
        self.ctx.events.emit(self.handle, "ResourceCreated", f"Created {describe_reference(ref)}")

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


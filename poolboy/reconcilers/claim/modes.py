"""The two ways a claim asks for resources, behind one interface.

A claim names either ONE provider with parameter values (``spec.provider``: provider mode) or a list of
resources, each with a template and a provider named or matched (``spec.resources``: resources mode). Everything
that differs between the two — which providers serve the claim, how the claim is admitted (approval and
parameters, or template validation), what the handle's ``spec.provider`` and ``spec.resources`` should be, and
which template variables apply — is a method of :class:`Mode`; the rest of the reconciler never asks which mode
it is in.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from poolboy import kube
from poolboy.domain import claim_parameters, claim_validation, matching, resource_targets
from poolboy.domain.provider import Provider
from poolboy.reconcilers.claim.claim_run import ClaimRun
from poolboy.result import PermanentError
from poolboy.utils import schema, templating
from poolboy.utils.merge import deep_merge


class Mode(Protocol):
    """What the reconciler needs to know about a claim's way of asking for resources."""

    providers: list[Provider]  # every provider serving the claim, in resource order
    context_provider: Provider | None  # the ``resource_provider`` of templates evaluated on the claim

    def initial_spec(self, run: ClaimRun) -> dict[str, Any] | None:
        """The spec change written once when the claim is first seen (its defaulted resources), or None."""

    def admit(self, run: ClaimRun) -> bool:
        """Check the claim may go on; False when it waits (for approval). Raises PermanentError on bad input."""

    def provider_spec(self, run: ClaimRun) -> dict[str, Any] | None:
        """The handle's ``spec.provider`` (None: the handle must have none)."""

    def claim_resources(self, run: ClaimRun) -> list[dict[str, Any]]:
        """The claim's resources as the handle should have them: names, full provider refs, templates."""

    def propagated_resources(self, run: ClaimRun, handle_spec: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The handle's ``spec.resources`` once the claim's later changes are carried over (None: left alone)."""

    def template_vars(self, handle: dict[str, Any] | None) -> dict[str, Any]:
        """The variables templates see for this claim (and its handle, once it has one)."""


def context_variables(run: ClaimRun, provider: Provider | None, handle: dict[str, Any] | None) -> dict[str, Any]:
    """The objects templates evaluated for a claim see by name."""
    return {"resource_claim": templating.wrap_object(run.claim),
            "resource_handle": templating.wrap_object(handle) if handle is not None else None,
            "resource_provider": templating.wrap_object(provider.obj) if provider is not None else None}


class ProviderMode:
    """``spec.provider``: one provider, its parameters, possibly an approval; the provider lists the resources."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.providers = [provider]
        self.context_provider: Provider | None = provider
        self._resource_list: list[dict[str, Any]] | None = None

    def initial_spec(self, run: ClaimRun) -> dict[str, Any] | None:
        return None

    def admit(self, run: ClaimRun) -> bool:
        if not self._approved(run):
            return False
        self._evaluate_parameters(run)
        return True

    def _approved(self, run: ClaimRun) -> bool:
        """A provider that requires approval holds an unbound claim until ``status.approval.state`` is approved."""
        if not self.provider.approval_required or (run.status.get("resourceHandle") or {}).get("name"):
            return True
        approval = run.status.get("approval") or {}
        if not approval.get("state"):
            run.status["approval"] = {"state": "pending", "message": self.provider.approval_pending_message}
            approval = run.status["approval"]
        if approval.get("state") == "approved":
            return True
        state = approval.get("state")
        reason = "ApprovalRejected" if state == "rejected" else "ApprovalPending"
        run.condition("Synced", False, reason, approval.get("message") or f"Approval {state}.")
        run.condition("Bound", False, reason, "Waiting for approval.")
        return False

    def _evaluate_parameters(self, run: ClaimRun) -> None:
        """The effective parameter values into ``status.provider``; ``ValidationFailed`` with every error."""
        handle = run.known_handle()
        provider_status = run.status.setdefault("provider", {"name": self.provider.name})
        outcome = claim_parameters.evaluate(
            self.provider.parameters, (run.spec.get("provider") or {}).get("parameterValues"),
            provider_status.get("parameterValues"),
            context_variables=context_variables(run, self.provider, handle),
            template_vars=self.provider.template_vars(handle))
        if outcome.errors:
            if provider_status.get("validationErrors") != outcome.errors:
                provider_status["validationErrors"] = outcome.errors
            raise PermanentError("ValidationFailed", "; ".join(outcome.errors))
        provider_status.pop("validationErrors", None)
        provider_status["parameterValues"] = outcome.values
        if "resources" not in run.status:
            run.status["resources"] = [{"name": r["name"], "provider": r["provider"]}
                                       for r in self._resources(run)]

    def _resources(self, run: ClaimRun) -> list[dict[str, Any]]:
        """The provider's resource list for the claim's parameter values, rendered once per run."""
        if self._resource_list is None:
            values = (run.status.get("provider") or {}).get("parameterValues") or {}
            self._resource_list = self.provider.resource_list(run.ctx, values, resource_claim=run.claim)
        return self._resource_list

    def provider_spec(self, run: ClaimRun) -> dict[str, Any] | None:
        return {"name": self.provider.name,
                "parameterValues": copy.deepcopy((run.status.get("provider") or {}).get("parameterValues") or {})}

    def claim_resources(self, run: ClaimRun) -> list[dict[str, Any]]:
        return copy.deepcopy(self._resources(run))

    def propagated_resources(self, run: ClaimRun, handle_spec: dict[str, Any]) -> list[dict[str, Any]] | None:
        return None  # the provider renders the handle's resources from the parameter values

    def template_vars(self, handle: dict[str, Any] | None) -> dict[str, Any]:
        return self.provider.template_vars(handle)


def target_refusal(run: ClaimRun, index: int, resource: dict[str, Any], provider: Provider) -> str | None:
    """Why the claim's template may not place this resource where it says (:mod:`poolboy.domain.resource_targets`).

    The provider's default is rendered only to excuse what would otherwise be refused (a namespace or kind that the
    default itself gives), so a claim in its own namespace costs no render."""
    template = resource.get("template") or {}
    namespace = run.claim["metadata"]["namespace"]

    def labels_of(name: str) -> dict[str, str] | None:
        found = run.ctx.kube.get_or_none("v1", "Namespace", name)
        return None if found is None else dict((found.get("metadata") or {}).get("labels") or {})

    def decide(default: dict[str, Any] | None) -> str | None:
        return resource_targets.refusal(template, claim_namespace=namespace, provider_name=provider.name,
                                        policy=resource_targets.TargetPolicy.of(provider.spec),
                                        override=provider.override, default=default,
                                        namespaced=_namespaced(run, template, provider.override),
                                        labels_of=labels_of)

    if decide(None) is None:
        return None
    return decide(provider.render_default(run.ctx, resource_claim=run.claim, resource_index=index,
                                          resource_name=resource.get("name")))


def _namespaced(run: ClaimRun, template: dict[str, Any], override: dict[str, Any] | None) -> bool | None:
    """Whether the kind the resource will have is namespaced (None: unknown, or an API that is missing)."""
    source = override if isinstance(override, dict) and "kind" in override else template
    api_version, kind = source.get("apiVersion") or template.get("apiVersion"), source.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or "{" in api_version + kind:
        return None
    try:
        return run.ctx.mapper.resource_info(api_version, kind).namespaced
    except kube.ApiError:
        return None


class ResourcesMode:
    """``spec.resources``: one provider per resource; each template is defaulted and validated by its provider."""

    def __init__(self, providers: list[Provider]) -> None:
        self.providers = providers
        self.context_provider: Provider | None = None

    def initial_spec(self, run: ClaimRun) -> dict[str, Any] | None:
        """Each resource with its provider's ref, and its template completed by the provider's defaults."""
        resources = []
        for index, (resource, provider) in enumerate(zip(run.spec.get("resources") or [], self.providers,
                                                         strict=False)):
            entry = copy.deepcopy(resource)
            entry["provider"] = provider.ref
            template = copy.deepcopy(entry.get("template") or {})
            default = provider.render_default(run.ctx, resource_claim=run.claim, resource_index=index,
                                              resource_name=resource.get("name"))
            template = deep_merge(template, default or {}, overwrite=False)
            resource_schema = provider.validation.get("openAPIV3Schema")
            if resource_schema:
                template = deep_merge(template, schema.defaults_from_schema(resource_schema) or {}, overwrite=False)
            entry["template"] = template
            resources.append(entry)
        return {"resources": resources}

    def admit(self, run: ClaimRun) -> bool:
        """Every template against its provider's validation; ``ValidationFailed`` naming each failing resource."""
        handle = run.known_handle()
        failed: list[str] = []
        for index, (resource, provider) in enumerate(zip(run.spec.get("resources") or [], self.providers,
                                                         strict=False)):
            message = claim_validation.validate_template(
                resource.get("template"), provider.validation,
                context_variables=context_variables(run, provider, handle),
                template_vars=provider.template_vars(handle)) or target_refusal(run, index, resource, provider)
            entry = run.status["resources"][index]
            if message:
                entry["validationError"] = message
                failed.append(f"spec.resources[{index}]: {message}")
            else:
                entry.pop("validationError", None)
        if failed:
            raise PermanentError("ValidationFailed", "; ".join(failed))
        return True

    def provider_spec(self, run: ClaimRun) -> dict[str, Any] | None:
        return None

    def claim_resources(self, run: ClaimRun) -> list[dict[str, Any]]:
        result = []
        for resource, provider in zip(run.spec.get("resources") or [], self.providers, strict=False):
            entry: dict[str, Any] = {"provider": provider.ref}
            if resource.get("name"):
                entry["name"] = resource["name"]
            if resource.get("template") is not None:
                entry["template"] = copy.deepcopy(resource["template"])
            result.append(entry)
        return result

    def propagated_resources(self, run: ClaimRun, handle_spec: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The handle's resources with the claim's templates merged over them, new ones appended."""
        resources = [copy.deepcopy(r) for r in handle_spec.get("resources") or []]
        for index, claim_resource in enumerate(self.claim_resources(run)):
            if index >= len(resources):
                resources.append(claim_resource)
                continue
            if claim_resource.get("template") is not None:
                resources[index]["template"] = deep_merge(copy.deepcopy(resources[index].get("template") or {}),
                                                          claim_resource["template"], overwrite=True)
        return resources

    def template_vars(self, handle: dict[str, Any] | None) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for provider in self.providers:
            result.update(provider.vars)
        if handle is not None:
            result.update((handle.get("spec") or {}).get("vars") or {})
        return result


def select_mode(run: ClaimRun) -> Mode:
    """The claim's mode and providers; exactly one of ``spec.provider`` and ``spec.resources`` must be given."""
    spec = run.spec
    has_provider = "provider" in spec and spec.get("provider") is not None
    has_resources = "resources" in spec and spec.get("resources") is not None
    if has_provider == has_resources:
        raise PermanentError("InvalidSpec", "Exactly one of spec.provider and spec.resources must be given.")
    if has_resources and not spec["resources"]:
        raise PermanentError("InvalidSpec", "spec.resources is empty: list at least one resource.")
    if has_provider:
        return _provider_mode(run)
    return _resources_mode(run)


def _provider_mode(run: ClaimRun) -> ProviderMode:
    """The named provider (immutable once recorded), whose claim labels and annotations go onto the claim."""
    name = (run.spec["provider"] or {}).get("name")
    recorded = (run.status.get("provider") or {}).get("name")
    if recorded and name != recorded:
        raise PermanentError("InvalidSpec", f"spec.provider is immutable: {recorded} cannot be changed to {name}.")
    provider = Provider.get(run.ctx, name or "")
    run.status.setdefault("provider", {})["name"] = name
    patch: dict[str, Any] = {}
    for key, wanted in (("labels", provider.resource_claim_labels),
                        ("annotations", provider.resource_claim_annotations)):
        current = run.meta.get(key) or {}
        changed = {k: v for k, v in wanted.items() if current.get(k) != v}
        if changed:
            patch[key] = changed
    if patch:
        run.patch_claim({"metadata": patch})
    return ProviderMode(provider)


def _resources_mode(run: ClaimRun) -> ResourcesMode:
    """Each resource's provider, named or the one provider whose template matches; recorded in the status."""
    providers: list[Provider] = []
    all_providers: list[Provider] | None = None
    for index, resource in enumerate(run.spec.get("resources") or []):
        provider_name = (resource.get("provider") or {}).get("name")
        if provider_name:
            providers.append(Provider.get(run.ctx, provider_name))
            continue
        if all_providers is None:
            all_providers = Provider.list_all(run.ctx)
        matches = matching.select_providers(resource.get("template") or {}, [p.obj for p in all_providers])
        if len(matches) != 1:
            what = "no ResourceProvider matches" if not matches else \
                "more than one ResourceProvider matches (" + ", ".join(_names(matches)) + ")"
            raise PermanentError("NoProviderMatch" if not matches else "AmbiguousProviderMatch",
                                 f"spec.resources[{index}]: {what} the template.")
        providers.append(_as_provider(matches[0], all_providers))
    resources = [copy.deepcopy(r) for r in run.status.get("resources") or []]
    for index, provider in enumerate(providers):
        while len(resources) <= index:
            resources.append({})
        claim_name = (run.spec["resources"][index] or {}).get("name")
        if claim_name:
            resources[index]["name"] = claim_name
        resources[index]["provider"] = provider.ref
    run.status["resources"] = resources
    return ResourcesMode(providers)


def check_providers(run: ClaimRun, mode: Mode) -> None:
    """``ProviderInvalid`` when a provider the claim uses, or one it links, has a broken spec: the administrator's
    mistake must not read as the user's (``ValidationFailed``) nor stall the claim without a word. A missing
    linked provider is left to the resource list, which reports ``ProviderNotFound``."""
    seen: set[str] = set()
    pending = list(mode.providers)
    while pending:
        provider = pending.pop(0)
        if provider.name in seen:
            continue
        seen.add(provider.name)
        provider.ensure_valid()
        for link in provider.linked_resource_providers:
            linked = Provider.get_or_none(run.ctx, link.get("name") or "") if isinstance(link, dict) else None
            if linked is not None:
                pending.append(linked)


def _names(matches: list[Any]) -> list[str]:
    return [m.name if isinstance(m, Provider) else m["metadata"]["name"] for m in matches]


def _as_provider(match: Any, all_providers: list[Provider]) -> Provider:
    if isinstance(match, Provider):
        return match
    name = match["metadata"]["name"]
    return next(p for p in all_providers if p.name == name)

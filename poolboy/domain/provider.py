"""ResourceProvider wrapper: lookup, validity and the provider-side rendering rules, on top of the typed spec fields
of :mod:`poolboy.domain.provider_spec` (docs/behaviour.md#resources, #claim-initialisation, #linked-providers).

Both reconcilers (claim and handle) need the same answers from a provider — "what is the resource list for
these parameter values", "what is the final definition", "what are the lifespan limits" — so they live here,
once, instead of being re-derived in each reconciler. The wrapper reads nothing from a cache: ``Provider.get``
goes to the API every time, because a reconcile must see the provider as it is now
(docs/behaviour.md#triggers-and-finalizers).
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from poolboy.domain.provider_spec import ProviderSpec
from poolboy.kinds import RESOURCE_PROVIDER
from poolboy.result import PermanentError
from poolboy.utils import timeutil

if TYPE_CHECKING:
    from poolboy.context import Context
    from poolboy.domain.lifespan import Limits


def _templating() -> Any:
    """Imported on use so that this module (and ``ProviderNotFound``) imports even where templating is unused."""
    from poolboy.utils import templating

    return templating


class ProviderNotFound(PermanentError):
    """A claim, handle, pool or link names a provider that does not exist in the operator namespace; the message
    offers the nearest existing names, since the usual cause is a typo."""

    def __init__(self, name: str, near: Iterable[str] = ()) -> None:
        near = list(near)
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        super().__init__("ProviderNotFound", f"ResourceProvider {name} not found{hint}")
        self.name = name
        self.near = near


#: how many near names a ProviderNotFound offers, and how close (difflib's ratio) a name must be to be offered
NEAR_NAMES, NEAR_CUTOFF = 3, 0.6


def near_names(name: str, existing: Iterable[str]) -> list[str]:
    """The existing provider names closest to ``name``, closest first (a typo's likely intent)."""
    return difflib.get_close_matches(name, list(existing), n=NEAR_NAMES, cutoff=NEAR_CUTOFF)


class ProviderInvalid(PermanentError):
    """A provider's own spec is broken (:mod:`poolboy.domain.provider_validation`): the administrator must fix it.

    Raised for a claim or pool that uses the provider, so that they say the provider is broken rather than
    blaming the user's input; the provider itself carries the full list in its ``Valid`` condition."""

    def __init__(self, provider: str, problems: list[tuple[str, str]]) -> None:
        from poolboy.domain.provider_validation import describe

        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__("ProviderInvalid", f"ResourceProvider {provider} is invalid: {describe(problems[0])}{more}")
        self.name = provider


class ProviderTemplateError(PermanentError):
    """A provider template (default, override, definition, link values) failed to render: the admin must fix it."""

    def __init__(self, provider: str, what: str, error: Exception) -> None:
        super().__init__("TemplateError", f"ResourceProvider {provider} {what} failed to render: {error}")


def _wrap(obj: Mapping[str, Any] | None) -> Any:
    return _templating().wrap_object(obj) if obj is not None else None


class Provider(ProviderSpec):
    """A ResourceProvider as returned by the API, plus the rules that only depend on it (its spec fields:
    :class:`~poolboy.domain.provider_spec.ProviderSpec`)."""

    # --- lookup --------------------------------------------------------------------------------------------

    @classmethod
    def get(cls, ctx: Context, name: str) -> Provider:
        """Fresh read from the operator namespace; ``ProviderNotFound`` (permanent) when absent, naming the nearest
        providers the run can see (one list, only on that failure)."""
        found = cls.get_or_none(ctx, name)
        if found is None:
            existing = ctx.kube.list(ctx.settings.api_version, RESOURCE_PROVIDER, ctx.settings.operator_namespace)
            raise ProviderNotFound(name, near_names(name, (p["metadata"]["name"] for p in existing)))
        return found

    @classmethod
    def get_or_none(cls, ctx: Context, name: str) -> Provider | None:
        obj = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_PROVIDER, name, ctx.settings.operator_namespace)
        return cls(obj) if obj is not None else None

    @classmethod
    def list_all(cls, ctx: Context) -> list[Provider]:
        """Every provider, from the API server itself: matching must consider every provider that exists
        (docs/behaviour.md#provider-selection), and one created just before the claim may not be in the read cache
        yet, which would make an ambiguous template look like a match."""
        items = ctx.api_reader.list(ctx.settings.api_version, RESOURCE_PROVIDER, ctx.settings.operator_namespace)
        return sorted((cls(item) for item in items), key=lambda p: p.name)

    # --- validity ------------------------------------------------------------------------------------------

    @property
    def problems(self) -> list[tuple[str, str]]:
        """What is wrong with the spec itself, ``[(field path, message)]`` (cached by the spec's content)."""
        from poolboy.domain.provider_validation import problems

        return problems(self.spec)

    def ensure_valid(self) -> Provider:
        """``self``, or ``ProviderInvalid`` naming the first broken field."""
        found = self.problems
        if found:
            raise ProviderInvalid(self.name, found)
        return self

    def _base_variables(self, resource_claim: Mapping[str, Any] | None,
                        resource_handle: Mapping[str, Any] | None) -> dict[str, Any]:
        return {"resource_claim": _wrap(resource_claim), "resource_handle": _wrap(resource_handle),
                "resource_provider": _wrap(self.obj)}

    def _render(self, what: str, template: Any, variables: dict[str, Any], template_vars: dict[str, Any]) -> Any:
        try:
            return _templating().render(template, variables, template_vars)
        except _templating().TemplateError as error:
            raise ProviderTemplateError(self.name, what, error) from error

    # --- parameters ----------------------------------------------------------------------------------------

    def effective_parameter_values(self, parameter_values: Mapping[str, Any] | None, *,
                                   resource_claim: Mapping[str, Any] | None = None,
                                   resource_handle: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Given values, then each missing parameter's default (template, value, schema default;
        docs/behaviour.md#parameters).

        Extra keys are kept: values passed to a linked provider are not validated (docs/behaviour.md#linked-providers).
        """
        values = dict(parameter_values or {})
        for parameter in self.parameters:
            name = parameter.get("name")
            if not name or name in values:
                continue
            default = parameter.get("default") or {}
            if default.get("template") is not None:
                variables = {**values, **self._base_variables(resource_claim, resource_handle)}
                values[name] = self._render(f"parameter {name} default", default["template"], variables,
                                            self.template_vars(resource_handle))
            elif "value" in default:
                values[name] = copy.deepcopy(default["value"])
            elif "default" in ((parameter.get("validation") or {}).get("openAPIV3Schema") or {}):
                values[name] = copy.deepcopy(parameter["validation"]["openAPIV3Schema"]["default"])
        return values

    # --- rendering -----------------------------------------------------------------------------------------

    def render_default(self, ctx: Context, *, resource_claim: Mapping[str, Any] | None, resource_index: int,
                       resource_name: str | None) -> dict[str, Any]:
        """The fill-only ``default`` template for claim initialisation (docs/behaviour.md#claim-initialisation),
        rendered if enabled."""
        default = copy.deepcopy(self.default or {})
        if not self.template_enable:
            return default
        variables = {**self._base_variables(resource_claim, None), "resource_index": resource_index,
                     "resource_name": resource_name}
        variables.pop("resource_handle")
        rendered: dict[str, Any] = self._render("default", default, variables, self.template_vars())
        return rendered

    def definition(self, ctx: Context, parameter_values: Mapping[str, Any] | None, *,
                   resource_claim: Mapping[str, Any] | None = None,
                   resource_handle: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """``template.definition`` rendered with the parameter values, vars and objects
        (docs/behaviour.md#claim-initialisation, #template-variables)."""
        if self.template_definition is None:
            return None
        values = self.effective_parameter_values(parameter_values, resource_claim=resource_claim,
                                                 resource_handle=resource_handle)
        variables = {**values, **self._base_variables(resource_claim, resource_handle)}
        rendered: dict[str, Any] | None = self._render("template.definition", copy.deepcopy(self.template_definition),
                                                       variables, self.template_vars(resource_handle))
        return rendered

    def resource_list(self, ctx: Context, parameter_values: Mapping[str, Any] | None, *,
                      resource_claim: Mapping[str, Any] | None = None,
                      resource_handle: Mapping[str, Any] | None = None,
                      resource_name: str | None = None, _depth: int = 0) -> list[dict[str, Any]]:
        """The provider's resources, dependencies first (docs/behaviour.md#linked-providers): ``[{name, provider,
        template?}]``.

        ``resource_name`` names this provider's own entry (a link's ``resourceName``); default: ``resourceName``
        or the provider name.
        """
        if _depth > 20:
            raise PermanentError("LinkCycle", f"ResourceProvider {self.name}: linkedResourceProviders nest too deep"
                                 " (a cycle?)")
        values = self.effective_parameter_values(parameter_values, resource_claim=resource_claim,
                                                 resource_handle=resource_handle)
        result: list[dict[str, Any]] = []
        for link in self.linked_resource_providers:
            base = {**values, "resource_claim": _wrap(resource_claim), "resource_handle": _wrap(resource_handle)}
            when = link.get("when")
            if when:
                try:
                    included = _templating().check(when, {**base, "resource_provider": _wrap(link)},
                                                self.template_vars(resource_handle))
                except _templating().TemplateError as error:
                    raise ProviderTemplateError(self.name, f"link {link.get('name')} when", error) from error
                if not included:
                    continue
            linked = Provider.get(ctx, link["name"])
            linked_values = self._render(f"link {linked.name} parameterValues",
                                         copy.deepcopy(link.get("parameterValues") or {}), base,
                                         self.template_vars(resource_handle))
            result.extend(linked.resource_list(ctx, linked_values, resource_claim=resource_claim,
                                               resource_handle=resource_handle,
                                               resource_name=link.get("resourceName") or linked.name,
                                               _depth=_depth + 1))
        if self.has_template_definition:
            entry: dict[str, Any] = {"name": resource_name or self.resource_name, "provider": self.ref}
            template = self.definition(ctx, values, resource_claim=resource_claim, resource_handle=resource_handle)
            if template is not None:
                entry["template"] = template
            result.append(entry)
        return result

    def render_override(self, ctx: Context, variables: dict[str, Any],
                        template_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        """``override``, rendered with the docs/behaviour.md#template-variables override variables when
        ``template.enable``; else literal."""
        override = copy.deepcopy(self.override or {})
        if not self.template_enable:
            return override
        rendered: dict[str, Any] = self._render("override", override, variables,
                                                self.template_vars() if template_vars is None else template_vars)
        return rendered

    # --- lifespan ------------------------------------------------------------------------------------------

    def _lifespan_value(self, key: str, variables: dict[str, Any], template_vars: dict[str, Any]) -> timedelta | None:
        raw = self.lifespan.get(key)
        if raw in (None, ""):
            return None
        value: Any = raw
        if isinstance(raw, str) and _templating().has_template(raw):  # templates even without template.enable
            try:
                value = _templating().render_string(raw, variables, template_vars)
            except _templating().TemplateError as error:
                raise PermanentError("InvalidLifespan", f"ResourceProvider {self.name} lifespan.{key}: {error}") \
                    from error
        if value in (None, ""):
            return None
        try:
            return timeutil.parse_interval(str(value).strip())
        except (ValueError, TypeError) as error:
            raise PermanentError("InvalidLifespan", f"ResourceProvider {self.name} lifespan.{key} {value!r} is not"
                                 f" a valid interval: {error}") from error

    def lifespan_limits(self, ctx: Context, *, resource_claim: Mapping[str, Any] | None,
                        resource_handle: Mapping[str, Any] | None = None,
                        vars: dict[str, Any] | None = None) -> Limits:
        """Evaluated ``lifespan.default/maximum/relativeMaximum`` (docs/behaviour.md#lifespans); unparsable →
        ``InvalidLifespan``."""
        variables: dict[str, Any] = {"resource_claim": _wrap(resource_claim)}
        if resource_handle is not None:
            variables["resource_handle"] = _wrap(resource_handle)
        template_vars = self.template_vars(resource_handle) if vars is None else vars
        from poolboy.domain.lifespan import Limits

        return Limits(
            default=self._lifespan_value("default", variables, template_vars),
            maximum=self._lifespan_value("maximum", variables, template_vars),
            relative_maximum=self._lifespan_value("relativeMaximum", variables, template_vars),
        )


def clock_rerun(ctx: Context, providers: Iterable[Provider]) -> datetime | None:
    """When a claim or handle rendered by ``providers`` must run again because time passed (None: it need not)."""
    if any(provider.reads_clock for provider in providers):
        return ctx.now + timedelta(seconds=ctx.settings.time_dependent_interval)
    return None

"""Pool handle construction and the scaling creation count.

A scaling's count must be exact even when steps repeat or race, so it is a SET of handle names, not a counter:
the handles the scaling has ever been seen to own (``scaling.status.handles``, kept by the scaling reconciler)
united with the live handles labelled with its name, minus the handles the pool deleted as unhealthy (which the
pool records in its own status before deleting them, so the scaling's count is "decremented" and the handle is
replaced). Both the pool (to decide how many to create) and the scaling (to write ``status.count``) use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from poolboy.domain import claim_parameters, pool_revision, standby
from poolboy.domain.handle_factory import handle_name, new_handle
from poolboy.domain.provider import Provider
from poolboy.kinds import RESOURCE_POOL
from poolboy.result import PermanentError
from poolboy.utils import templating, timeutil

if TYPE_CHECKING:
    from poolboy.context import Context

UNHEALTHY_DELETED_KEY = "scalingUnhealthyDeleted"


def scaling_created(scaling: Mapping[str, Any], live_names: Iterable[str],
                    pool: Mapping[str, Any] | None) -> set[str]:
    """The handles that count towards ``scaling.status.count`` (see module docstring)."""
    name = scaling["metadata"]["name"]
    recorded = set((scaling.get("status") or {}).get("handles") or [])
    removed = set((((pool or {}).get("status") or {}).get(UNHEALTHY_DELETED_KEY) or {}).get(name) or [])
    return (recorded | set(live_names)) - removed


def handle_lifespan(ctx: Context, pool: Mapping[str, Any], providers: list[Provider]) -> dict[str, Any]:
    """The pool's lifespan replaces the whole block; else each provider field goes into its own field (the first
    provider that sets it wins); ``unclaimed`` becomes the end of a handle nobody claims."""
    spec = pool.get("spec") or {}
    source = spec.get("lifespan")
    if source is None:
        source = {}
        for provider in providers:
            for key, value in provider.lifespan.items():
                source.setdefault(key, value)
    result = {key: source[key] for key in ("default", "maximum", "relativeMaximum") if source.get(key)}
    if source.get("unclaimed"):
        result["end"] = timeutil.format_timestamp(ctx.now + timeutil.parse_interval(source["unclaimed"]))
    return result


def revision(pool: Mapping[str, Any], providers: list[Provider]) -> str:
    """The revision of the handles the pool builds now (see :mod:`poolboy.domain.pool_revision`)."""
    return pool_revision.revision(pool, [(provider.name, provider.spec) for provider in providers])


def build_pool_handle(ctx: Context, pool: Mapping[str, Any], providers: list[Provider], *,
                      scaling_name: str | None = None, name: str | None = None) -> dict[str, Any]:
    """The ResourceHandle body a pool creates (its provider or resources, vars, lifespan, preference score and
    resource labels/annotations), annotated with the revision it is built from."""
    metadata = pool["metadata"]
    spec = pool.get("spec") or {}
    labels = {ctx.label("resource-pool-name"): metadata["name"],
              ctx.label("resource-pool-namespace"): metadata["namespace"]}
    if scaling_name:
        labels[ctx.label("resource-pool-scaling-name")] = scaling_name
    handle_spec: dict[str, Any] = {
        "resourcePool": {"apiVersion": ctx.settings.api_version, "kind": RESOURCE_POOL, "name": metadata["name"],
                         "namespace": metadata["namespace"]},
    }
    if spec.get("vars"):
        handle_spec["vars"] = spec["vars"]
    if spec.get("provider"):
        handle_spec["provider"] = spec["provider"]
    else:
        handle_spec["resources"] = spec.get("resources") or []
    lifespan = handle_lifespan(ctx, pool, providers)
    if lifespan:
        handle_spec["lifespan"] = lifespan
    for key in ("preferenceScore", "resourceAnnotations", "resourceLabels"):
        if spec.get(key) is not None:
            handle_spec[key] = spec[key]
    if standby.uses_standby(pool):
        handle_spec["standby"] = False  # runs until the pool places it: it shows its state even if bound before
    return new_handle(ctx, name or handle_name(), labels=labels, spec=handle_spec,
                      annotations={ctx.label(pool_revision.ANNOTATION): revision(pool, providers)})


def pool_providers(ctx: Context, pool: Mapping[str, Any]) -> list[Provider]:
    """The pool's provider (provider mode) or its resources' providers, fresh from the API; ``ProviderNotFound`` or
    ``ProviderInvalid`` (a broken provider spec) when one cannot serve.

    In provider mode the pool's ``parameterValues`` must pass the provider's parameter schemas and checks first:
    handles made from invalid values would carry them to every claim that binds one (``ValidationFailed``).
    """
    spec = pool.get("spec") or {}
    names = [spec["provider"]["name"]] if spec.get("provider") else \
        [(r.get("provider") or {}).get("name") for r in spec.get("resources") or []]
    providers = [Provider.get(ctx, n).ensure_valid() for n in dict.fromkeys(n for n in names if n)]
    if spec.get("provider") and providers:
        provider = providers[0]
        errors = claim_parameters.check_given(
            provider.parameters, spec["provider"].get("parameterValues"),
            context_variables={"resource_claim": None, "resource_handle": None,
                               "resource_provider": templating.wrap_object(provider.obj)},
            template_vars=provider.template_vars())
        if errors:
            raise PermanentError("ValidationFailed", "; ".join(errors))
    return providers

"""What a reconcile is about to read, named before it reads it, so that the reader can fetch it all at once.

A run reads its own object, then the objects that object names: a claim its providers, its handle and the resources it
mirrors; a handle its claim, the claim's namespace (the requester), its providers and its resources. Read one by one,
each is a round trip to the shared cache in Redis; named up front they are one (:meth:`Context.prefetch
<poolboy.context.Context.prefetch>`, where the engine supplies a read-ahead). A name listed here that the run does not
read after all costs a little Redis work, nothing else: every read still goes through the reader, and every write
keeps its precondition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE, RESOURCE_PROVIDER
from poolboy.kube.interfaces import ObjectRef

if TYPE_CHECKING:
    from poolboy.context import Context



def claim_reads(ctx: Context, claim: Mapping[str, Any]) -> list[ObjectRef]:
    """The providers a claim names, its recorded handle and the managed resources its status mirrors."""
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    names = [(spec.get("provider") or {}).get("name")]
    names += [(resource.get("provider") or {}).get("name") for resource in spec.get("resources") or []]
    refs = _providers(ctx, names)
    handle = (status.get("resourceHandle") or {}).get("name")
    if handle:
        refs.append((ctx.settings.api_version, RESOURCE_HANDLE, handle, ctx.settings.operator_namespace))
    return refs + _references(status.get("resources"))


def handle_reads(ctx: Context, handle: Mapping[str, Any]) -> list[ObjectRef]:
    """A handle's claim and the claim's namespace, its providers and the managed resources it records."""
    spec = handle.get("spec") or {}
    refs: list[ObjectRef] = []
    claim = spec.get("resourceClaim") or {}
    if claim.get("name") and claim.get("namespace"):
        refs.append((claim.get("apiVersion") or ctx.settings.api_version, RESOURCE_CLAIM, claim["name"],
                     claim["namespace"]))
        refs.append(("v1", "Namespace", claim["namespace"], None))
    names = [(resource.get("provider") or {}).get("name") for resource in spec.get("resources") or []]
    return refs + _providers(ctx, names) + _references((handle.get("status") or {}).get("resources"))


def _providers(ctx: Context, names: Iterable[str | None]) -> list[ObjectRef]:
    return [(ctx.settings.api_version, RESOURCE_PROVIDER, name, ctx.settings.operator_namespace)
            for name in dict.fromkeys(n for n in names if n)]


def _references(entries: Iterable[Mapping[str, Any]] | None) -> list[ObjectRef]:
    refs: list[ObjectRef] = []
    for entry in entries or ():
        reference = entry.get("reference") or {}
        if reference.get("apiVersion") and reference.get("kind") and reference.get("name"):
            refs.append((reference["apiVersion"], reference["kind"], reference["name"], reference.get("namespace")))
    return refs

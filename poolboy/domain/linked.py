"""Linked-provider waits and template variables at handle reconcile (docs/behaviour.md#linked-providers, last bullets).

A dependent resource may only be created once the resource it links to satisfies the link's ``waitFor``; its
override can read values out of the linked resource's live state through ``templateVars`` (JSON pointers).
The linked resource is identified by provider name AND resource name (docs/behaviour.md#hard-cases: matching the
provider alone is an upstream bug).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2

from poolboy.domain.provider import Provider
from poolboy.utils import jsonpatch, templating

log = logging.getLogger(__name__)

WAITING_FOR_LINKED = "Linked ResourceProvider"


@dataclass
class LinkOutcome:
    waiting: bool = False
    template_vars: dict[str, Any] = field(default_factory=dict)


def entry_name(resource: Mapping[str, Any]) -> str | None:
    """The name a handle resource entry stands for: its ``name``, else its provider's name.

    Why: a resources-mode claim (``spec.resources: [{provider: {name: base}}, …]``, as upstream's own scenarios
    write them) gives its entries no names, and neither does a hand-made handle; such an entry is the provider's
    default entry, which a link names by the linked provider's name (docs/behaviour.md#resources, #linked-providers).
    """
    return resource.get("name") or (resource.get("provider") or {}).get("name")


def find_linked_index(link: Mapping[str, Any], resources: Sequence[Mapping[str, Any]], own_index: int) -> int | None:
    """Index of the handle resource with the link's provider name and resource name, else None."""
    provider_name = link.get("name")
    resource_name = link.get("resourceName") or provider_name
    for index, resource in enumerate(resources):
        if index == own_index:
            continue
        if (resource.get("provider") or {}).get("name") == provider_name and entry_name(resource) == resource_name:
            return index
    return None


def _resolve(state: Any, pointer: str, name: str) -> Any:
    if state is None:
        return jinja2.ChainableUndefined(name=name)
    try:
        return jsonpatch.resolve_pointer(state, pointer)
    except (KeyError, IndexError, ValueError, TypeError, jsonpatch.PatchError):
        return jinja2.ChainableUndefined(name=name)


def evaluate_links(provider: Provider, index: int, resources: Sequence[Mapping[str, Any]],
                   states: Sequence[Mapping[str, Any] | None], *, get_provider: Callable[[str], Provider],
                   resource_claim: Mapping[str, Any] | None, resource_handle: Mapping[str, Any],
                   template_vars: Mapping[str, Any]) -> LinkOutcome:
    """Whether resource ``index`` must wait for a linked resource, and the templateVars it gets."""
    outcome = LinkOutcome()
    for link in provider.linked_resource_providers:
        linked_index = find_linked_index(link, resources, index)
        if linked_index is None:
            continue
        linked_state = states[linked_index]
        link_vars = {item["name"]: _resolve(linked_state, item.get("from", ""), item["name"])
                     for item in link.get("templateVars") or [] if item.get("name")}
        outcome.template_vars.update(link_vars)
        wait_for = link.get("waitFor")
        if not wait_for:
            continue
        if linked_state is None:
            outcome.waiting = True
            continue
        variables = {
            **link_vars,
            "linked_resource_provider": templating.wrap_object(get_provider(link["name"]).obj),
            "linked_resource_state": linked_state,
            "resource_claim": templating.wrap_object(resource_claim) if resource_claim else None,
            "resource_handle": templating.wrap_object(resource_handle),
            "resource_provider": templating.wrap_object(provider.obj),
            "resource_state": states[index],
        }
        try:
            satisfied = templating.check(wait_for, variables, dict(template_vars))
        except templating.TemplateError as error:
            log.info("waitFor of link %s on provider %s: %s", link.get("name"), provider.name, error)
            satisfied = False
        if not satisfied:
            outcome.waiting = True
    return outcome

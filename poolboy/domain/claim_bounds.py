"""What one claim may ask for (docs/behaviour.md#claim-bounds, docs/security.md#4).

Why: everything a claim asks for is copied, validated, rendered with, propagated into its handle, created and mirrored
back into the claim's status, so a claim's size sets what its runs cost. The CRDs bound what their schema can say
(``maxItems`` on ``spec.resources``); the nesting and the size of the documents a claim brings (its templates and its
parameter values) are checked here, first in every run, before any of that work: too deep or too large is the
user's to fix, ``Synced=False`` with reason :data:`REASON`.

The limits sit far above what claims written for upstream use (a handful of resources, templates of a few kilobytes,
a few levels of nesting) and below what breaks: Poolboy's JSON encoder (orjson) writes no object nested deeper than
254 levels, so a claim status that mirrors a parameter document 250 levels deep could not be written at all; and a
claim whose managed resources hold more than about half of the API server's object limit (1.5 MB) cannot show their
states in its status.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from poolboy.result import PermanentError

REASON = "ClaimTooLarge"
MAX_RESOURCES = 100  # also the CRDs' maxItems of spec.resources (claims, handles, pools)
MAX_DEPTH = 100  # levels of mappings and lists in one template or in the parameter values
MAX_DOCUMENT_BYTES = 512 * 1024  # the claim's templates and parameter values together, as compact JSON


def nesting_depth(value: Any, limit: int) -> int:
    """Levels of mappings and lists in ``value`` (a scalar has 0), counted without recursion; once past ``limit``
    the walk stops and returns ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def documents(spec: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The documents a claim brings, by their path: each resource's template, then the parameter values."""
    for index, resource in enumerate(spec.get("resources") or []):
        if isinstance(resource, dict) and resource.get("template") is not None:
            yield f"spec.resources[{index}].template", resource["template"]
    provider = spec.get("provider")
    if isinstance(provider, dict) and provider.get("parameterValues") is not None:
        yield "spec.provider.parameterValues", provider["parameterValues"]


def check(spec: dict[str, Any]) -> None:
    """Raise ``ClaimTooLarge`` naming the limit when the claim lists too many resources or brings a document too
    deep, or documents too large together; the cost of the check grows with the claim's size, never faster."""
    count = len(spec.get("resources") or [])
    if count > MAX_RESOURCES:
        raise PermanentError(REASON, f"spec.resources lists {count} resources; a claim may list at most "
                                     f"{MAX_RESOURCES}.")
    total = 0
    for path, document in documents(spec):
        if nesting_depth(document, MAX_DEPTH) > MAX_DEPTH:
            raise PermanentError(REASON, f"{path} is nested more than {MAX_DEPTH} levels deep; a claim's templates "
                                         f"and parameterValues may nest at most {MAX_DEPTH} levels.")
        total += len(orjson.dumps(document))
    if total > MAX_DOCUMENT_BYTES:
        raise PermanentError(REASON, f"The claim's templates and parameterValues take {total} bytes as JSON; a claim "
                                     f"may bring at most {MAX_DOCUMENT_BYTES} bytes (512 KiB) of them.")

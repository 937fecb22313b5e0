"""Deep merge of JSON documents (docs/behaviour.md#deep-merge).

Used for provider ``default`` (fill-only), ``override`` (overwrite) and claim → handle template propagation
(overwrite). Rules:

- maps merge recursively, key by key;
- lists merge element by element by index; when ``update`` is longer than ``base``, only its elements past the end
  of ``base`` are appended (*correct behaviour*: upstream appended the whole update list again);
- anything else (scalars, or a type mismatch such as map vs list) is replaced by ``update`` in overwrite mode and
  kept in fill-only mode.

Fill-only mode (``overwrite=False``) sets only fields that are *absent*. A key present in ``base`` with value
``None`` counts as present and is kept: a user who wrote ``null`` made a choice, and "absent" in Kubernetes means
the key is missing. Nested maps and lists under a present key are still filled recursively.

Inputs are never mutated; the result shares no mutable containers with them.
"""

from __future__ import annotations

import copy
from typing import Any


def deep_merge(base: Any, update: Any, overwrite: bool = True) -> Any:
    """Return ``base`` merged with ``update`` as a new object (see module docstring for the rules)."""
    if isinstance(base, dict) and isinstance(update, dict):
        return _merge_dicts(base, update, overwrite)
    if isinstance(base, list) and isinstance(update, list):
        return _merge_lists(base, update, overwrite)
    return copy.deepcopy(update if overwrite else base)


def _merge_dicts(base: dict, update: dict, overwrite: bool) -> dict:
    merged = {key: copy.deepcopy(value) for key, value in base.items()}
    for key, value in update.items():
        merged[key] = deep_merge(base[key], value, overwrite) if key in base else copy.deepcopy(value)
    return merged


def _merge_lists(base: list, update: list, overwrite: bool) -> list:
    merged = [
        deep_merge(item, update[index], overwrite) if index < len(update) else copy.deepcopy(item)
        for index, item in enumerate(base)
    ]
    merged.extend(copy.deepcopy(item) for item in update[len(base) :])
    return merged


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch (RFC 7386) and return the result: maps merge, ``None`` removes a key, anything
    else (lists included) replaces. ``target`` is not modified. Used to keep a run's copy of an object equal to
    what the API server will make of the patch it stages."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def combine_merge_patches(first: dict, second: dict) -> dict:
    """One merge patch with the effect of ``first`` then ``second`` (a later ``None`` still removes the key)."""
    result = dict(first)
    for key, value in second.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = combine_merge_patches(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result

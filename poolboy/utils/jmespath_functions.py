"""JMESPath with the community functions provider templates use in ``json_query``
(docs/behaviour.md#template-filters-and-globals).

Why: Ansible's ``community.general.json_query`` adds ``from_items``, ``items`` and ``zip`` on top of standard
JMESPath (which already has ``keys``, ``values``, ``length``, ``contains``, ``||`` …). Templates written for upstream
Poolboy rely on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jmespath
from jmespath import functions

from poolboy.utils.template_guards.estimates import join_estimate
from poolboy.utils.template_guards.measure import refuse_estimate


class CommunityFunctions(functions.Functions):
    """Standard JMESPath functions plus ``from_items``, ``items`` and ``zip``; ``join`` is guarded."""

    @functions.signature({"types": ["array"]})
    def _func_from_items(self, pairs: list) -> dict:
        """``[[k, v], …]`` → ``{k: v, …}`` (items that are not 2-element arrays are skipped)."""
        return {str(pair[0]): pair[1] for pair in pairs if isinstance(pair, list) and len(pair) == 2}

    @functions.signature({"types": ["object"]})
    def _func_items(self, mapping: dict) -> list:
        """``{k: v, …}`` → ``[[k, v], …]``."""
        return [[key, value] for key, value in mapping.items()]

    @functions.signature({"types": ["string"]}, {"types": ["array-string"]})
    def _func_join(self, separator: str, items: list) -> str:
        """Standard ``join``, with its output estimated first: a long separator between many items amplifies."""
        refuse_estimate("json_query join", join_estimate(separator, items))
        return separator.join(items)

    @functions.signature({"types": ["array"], "variadic": True})
    def _func_zip(self, *arrays: list) -> list:
        """Element-wise tuples of the arrays, as arrays, stopping at the shortest."""
        return [list(group) for group in zip(*arrays, strict=False)]


_OPTIONS = jmespath.Options(custom_functions=CommunityFunctions())


def plain(value: Any) -> Any:
    """Plain ``dict``/``list`` copy: JMESPath type checks go by the exact type name, so subclasses fail."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def json_query(data: Any, expression: str) -> Any:
    """Evaluate a JMESPath ``expression`` over ``data`` with the community functions."""
    return jmespath.search(expression, plain(data), options=_OPTIONS)

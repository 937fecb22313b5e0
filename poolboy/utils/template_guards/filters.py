"""Filters and the ``lipsum`` global, guarded: deadline, input size, an estimate of the output before the call,
the result bounded and charged after it.

The filters whose output can grow with an argument are in :data:`FILTER_ESTIMATES`; the ones that read their whole
input are in :data:`TRAVERSING`; every other filter is at most a constant factor of its input and only checked
afterwards.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping, Sized
from typing import Any

from poolboy.utils.template_guards.estimates import format_estimate, join_estimate, json_estimate, replace_estimate
from poolboy.utils.template_guards.limits import MAX_ITEMS, MAX_STRING, budget, charge_iterations
from poolboy.utils.template_guards.measure import (
    account,
    as_int,
    check_length,
    check_size,
    measure,
    refuse_estimate,
)


def _lines(text: str) -> int:
    return text.count("\n") + 1


def _indent_estimate(a: Mapping[str, Any]) -> int:
    text, width = str(a["s"]), a["width"]
    per_line = len(width) if isinstance(width, str) else max(0, as_int(width))
    return len(text) + _lines(text) * per_line


def _wordwrap_estimate(a: Mapping[str, Any]) -> int:
    text = str(a["s"])
    width = max(1, as_int(a["width"], 1))
    breaks = len(text) // width + text.count(" ") + text.count("\n") + text.count("-") + 1
    return len(text) + breaks * len(str(a["wrapstring"] or "\n"))


def _urlize_estimate(a: Mapping[str, Any]) -> int:
    text = str(a["value"])
    per_link = len(str(a["target"] or "")) + len(str(a["rel"] or "")) + 64
    return 12 * len(text) + (len(text) // 3 + 1) * per_link


def _sum_estimate(a: Mapping[str, Any]) -> int:
    """``sum`` of sequences copies the running total at every step: quadratic. Bound the copying work."""
    start, items = a["start"], a["iterable"]
    if not isinstance(start, str | list | tuple) or not isinstance(items, Collection):
        return 0
    total = len(start) + sum(len(item) if isinstance(item, Sized) else 1 for item in items)
    check_length(total, "list")
    return total * len(items) // 10  # copying work, in units the MAX_STRING limit can bound


# name → (estimate of the result from the bound arguments, limit)
FILTER_ESTIMATES: dict[str, tuple[Callable[[Mapping[str, Any]], int], int]] = {
    "indent": (_indent_estimate, MAX_STRING),
    "center": (lambda a: max(len(str(a["value"])), as_int(a["width"])), MAX_STRING),
    "replace": (lambda a: replace_estimate(str(a["s"]), str(a["old"]), str(a["new"]), a["count"]), MAX_STRING),
    "format": (lambda a: format_estimate(str(a["value"]), a["args"], a["kwargs"]), MAX_STRING),
    "join": (lambda a: join_estimate(str(a["d"]), a["value"]) if isinstance(a["value"], Collection) else 0, MAX_STRING),
    "wordwrap": (_wordwrap_estimate, MAX_STRING),
    "truncate": (lambda a: len(str(a["s"])) + len(str(a["end"])), MAX_STRING),
    "urlize": (_urlize_estimate, 4 * MAX_STRING),
    "xmlattr": (lambda a: 6 * measure(a["d"]).text, 4 * MAX_STRING),
    "batch": (lambda a: as_int(a["linecount"]) if a["fill_with"] is not None else 0, MAX_ITEMS),
    "slice": (lambda a: as_int(a["slices"]), MAX_ITEMS),
    "sum": (_sum_estimate, MAX_STRING),
    "tojson": (lambda a: json_estimate(a["value"], a["indent"]), MAX_STRING),
    "pprint": (lambda a: json_estimate(a["value"], 1), MAX_STRING),
}
#: filters that read their whole input (a traversal of a huge shared structure must be refused, not run)
TRAVERSING = frozenset({"string", "list", "unique", "sort", "dictsort", "groupby", "min", "max", "sum", "join",
                        "tojson", "pprint", "xmlattr", "urlencode", "map", "select", "reject", "selectattr",
                        "rejectattr", "reverse", "batch", "slice", "items"})
#: filters that consume an iterable argument; a generator is materialised first so its size can be estimated
MATERIALISING = {"join": "value", "sum": "iterable"}
_PASS_PARAMS = ("eval_ctx", "environment", "env", "context")


def guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a filter: deadline, input size, estimate before the call, result bound and charge after it."""
    signature = inspect.signature(func)
    params = list(signature.parameters)
    passes = hasattr(func, "jinja_pass_arg")
    skip = 1 if passes and (not params or params[0] not in _PASS_PARAMS) else 0  # async_variant hides it
    value_param = params[1] if passes and not skip and len(params) > 1 else params[0]
    value_index = 1 if passes else 0  # where the filtered value is in the positional arguments
    estimate = FILTER_ESTIMATES.get(name)
    materialise = MATERIALISING.get(name)
    traverses = name in TRAVERSING

    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget().tick()
        if traverses and not (estimate or materialise) and len(args) > value_index:
            check_size(args[value_index])
        elif estimate or materialise or traverses:
            bound = signature.bind(*args[skip:], **kwargs)
            bound.apply_defaults()
            arguments = bound.arguments
            if materialise and not isinstance(arguments[materialise], Sized):
                arguments[materialise] = list(charge_iterations(arguments[materialise]))
                args, kwargs = (*args[:skip], *bound.args), bound.kwargs
            if traverses:
                check_size(arguments[value_param])
            if estimate:
                refuse_estimate(name, estimate[0](arguments), estimate[1])
        return account(func(*args, **kwargs))

    for attr in ("jinja_pass_arg", "__name__", "__doc__"):
        if hasattr(func, attr):
            setattr(guarded, attr, getattr(func, attr))
    return guarded


def guard_lipsum(func: Callable[..., str]) -> Callable[..., str]:
    def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # Jinja's parameter names
        refuse_estimate("lipsum", as_int(n) * as_int(max) * 12)
        return account(func(n, html, min, max))

    return lipsum

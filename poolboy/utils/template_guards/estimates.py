"""Upper bounds of what a formatting, replacing, joining or serialising operation would produce, computed from its
inputs before it runs (the operation itself is one call no deadline can interrupt)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from poolboy.utils.template_guards.limits import MAX_INDENT, MAX_STRING, LimitError
from poolboy.utils.template_guards.measure import as_int, measure, text_size

_PERCENT_WIDTH = re.compile(r"%[^a-zA-Z%]*?\*")
_BRACE_NESTED = re.compile(r"\{[^{}]*:[^{}]*\{")
_WIDTHS = re.compile(r"(?:%(?:\([^)]*\))?[-+ #0]*|:[^{}]*?|\.)(\d+)")  # widths and precisions


def check_format_string(fmt: str) -> None:
    """Dynamic widths (``%*d``, ``{:{}}``) cannot be estimated from the format string: refuse them."""
    if _PERCENT_WIDTH.search(fmt) or _BRACE_NESTED.search(fmt):
        raise LimitError("format width or precision too large or dynamic")


def format_estimate(fmt: str, args: Iterable[Any], kwargs: Mapping[str, Any] | None = None) -> int:
    """Upper bound of a ``%`` or ``str.format`` result: every field may print the widest width or the largest
    argument (fields may repeat an argument: ``'{0}{0}'``, ``'%(a)s%(a)s'``)."""
    check_format_string(fmt)
    values = list(args) + list((kwargs or {}).values())
    for value in list(values):
        if isinstance(value, Mapping):  # '%(key)s' % mapping
            values.extend(value.values())
    widths = [MAX_STRING + 1 if len(w) > 7 else int(w) for w in _WIDTHS.findall(fmt)]
    widest = max([*widths, *(text_size(v) for v in values), 0])
    fields = fmt.count("%") + fmt.count("{")
    return len(fmt) + fields * widest


def replace_estimate(text: str, old: str, new: str, count: Any = None) -> int:
    occurrences = text.count(old) if old else len(text) + 1
    limit = as_int(count, -1) if count is not None else -1
    if limit >= 0:
        occurrences = min(occurrences, limit)
    return len(text) + occurrences * max(0, len(new) - len(old))


def join_estimate(separator: str | bytes, items: Collection[Any]) -> int:
    return max(0, len(items) - 1) * len(separator) + sum(text_size(item) for item in items)


def json_estimate(value: Any, indent: Any = None, separators: Any = None) -> int:
    """``json.dumps`` output bound: text, plus indentation (depth × indent per element), plus separators."""
    width = len(indent) if isinstance(indent, str) else as_int(indent)
    if width > MAX_INDENT:
        raise LimitError(f"indent {width} too large (at most {MAX_INDENT})")
    separator = max((len(str(s)) for s in separators), default=2) if isinstance(separators, list | tuple) else 2
    size = measure(value)
    return size.text + size.units * (size.depth * width + separator + 1)

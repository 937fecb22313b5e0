"""Poolboy's filters and globals on top of Jinja's (docs/behaviour.md#template-filters-and-globals); the sandbox
guards every one of them (:mod:`poolboy.utils.template_guards.filters`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from jinja2 import pass_context
from jinja2.runtime import Undefined
from strgen import StringGenerator

from poolboy.utils import timeutil
from poolboy.utils.jmespath_functions import json_query
from poolboy.utils.template_guards.estimates import json_estimate
from poolboy.utils.template_guards.limits import MAX_EXPRESSION, LimitError
from poolboy.utils.template_guards.measure import check_size, refuse_estimate
from poolboy.utils.templating.values import str2bool


def _to_json(value: Any, indent: int | str | None = None, sort_keys: bool = False,
             separators: tuple[str, str] | None = None, ensure_ascii: bool = True) -> str:
    """``json.dumps`` with the options templates use; the output size is estimated first (indent, separators)."""
    refuse_estimate("to_json", json_estimate(value, indent, separators))
    return json.dumps(value, indent=indent, sort_keys=sort_keys, separators=separators,
                      ensure_ascii=ensure_ascii, default=str)


def _object(value: Any) -> str:
    return _to_json(value)


def _json_query(data: Any, expression: str) -> Any:
    check_size(data)
    if len(str(expression)) > MAX_EXPRESSION:
        raise LimitError(f"json_query expression of {len(str(expression))} characters is too long "
                                f"(at most {MAX_EXPRESSION})")
    return json_query(None if isinstance(data, Undefined) else data, expression)


def _merge_list_of_dicts(items: Iterable[Any]) -> dict:
    merged: dict = {}
    for item in items or ():
        if item is None or isinstance(item, Undefined):
            continue
        if not isinstance(item, Mapping):
            raise TypeError(f"merge_list_of_dicts: expected dicts, got {type(item).__name__}")
        merged.update(item)
    return merged


def _parse_time_interval(value: Any) -> timedelta:
    return timeutil.parse_interval(value)


_STRGEN_COUNT = re.compile(r"\{\s*(\d+)\s*(?:[:,]\s*(\d+)\s*)?\}")


@pass_context  # not a pure function: stops Jinja folding `'[a-z]{5}' | strgen` into the cached compiled template
def _strgen(context: Any, pattern: str) -> str:
    for match in _STRGEN_COUNT.finditer(pattern):
        if any(int(group) > 10_000 for group in match.groups() if group):
            raise LimitError("strgen pattern repeats too much")
    rendered: str = StringGenerator(pattern).render()
    return rendered


def _to_datetime(value: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> datetime:
    return datetime.strptime(value, fmt)


def _now(utc: bool = False, fmt: str | None = None) -> datetime | str:
    """``now(true)``: timezone-aware UTC, so it subtracts from ``to_datetime(..., '...%z')`` values
    (docs/behaviour.md#template-filters-and-globals);
    ``now()``: naive local time, which pairs with naive values (``to_datetime`` without ``%z``, ``datetime.now()``).
    """
    current = timeutil.utcnow()
    value = current if utc else current.astimezone().replace(tzinfo=None)
    return value.strftime(fmt) if fmt else value


FILTERS: dict[str, Callable[..., object]] = {
    "bool": str2bool,
    "json_query": _json_query,
    "merge_list_of_dicts": _merge_list_of_dicts,
    "object": _object,
    "parse_time_interval": _parse_time_interval,
    "strgen": _strgen,
    "to_datetime": _to_datetime,
    "to_json": _to_json,
}
GLOBALS: dict[str, object] = {"datetime": datetime, "timedelta": timedelta, "timezone": timezone, "now": _now}

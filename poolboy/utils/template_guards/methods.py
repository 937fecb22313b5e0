"""Methods called from a template (str/bytes and ``int.to_bytes``), guarded before the call: an amplifying call is
refused by the estimate of its result."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sized
from typing import Any

from poolboy.utils.template_guards.estimates import format_estimate, join_estimate, replace_estimate
from poolboy.utils.template_guards.limits import charge_iterations
from poolboy.utils.template_guards.measure import as_int, check_size, refuse_estimate


def _width_estimate(owner: Sized, args: tuple, kwargs: Mapping[str, Any]) -> int:
    return max(len(owner), as_int(args[0] if args else kwargs.get("width", 0)))


def _expandtabs_estimate(owner: str | bytes, args: tuple, kwargs: Mapping[str, Any]) -> int:
    tab = b"\t" if isinstance(owner, bytes) else "\t"
    tabsize = max(0, as_int(args[0] if args else kwargs.get("tabsize", 8)))
    return len(owner) + owner.count(tab) * tabsize  # type: ignore[arg-type]


def _replace_method_estimate(owner: str | bytes, args: tuple, kwargs: Mapping[str, Any]) -> int:
    if len(args) < 2:
        return len(owner)
    count = args[2] if len(args) > 2 else kwargs.get("count")
    return replace_estimate(str(owner), str(args[0]), str(args[1]), count)


def _translate_estimate(owner: str | bytes, args: tuple, kwargs: Mapping[str, Any]) -> int:
    table = args[0] if args else kwargs.get("table")
    if not isinstance(table, Mapping):
        return len(owner)
    widest = max((len(v) if isinstance(v, str | bytes) else 1 for v in table.values()), default=1)
    return len(owner) * widest


METHOD_ESTIMATES: dict[str, Callable[[Any, tuple, Mapping[str, Any]], int]] = {
    "center": _width_estimate, "ljust": _width_estimate, "rjust": _width_estimate, "zfill": _width_estimate,
    "expandtabs": _expandtabs_estimate,
    "replace": _replace_method_estimate,
    "format": lambda owner, args, kwargs: format_estimate(str(owner), args, kwargs),
    "format_map": lambda owner, args, kwargs: format_estimate(str(owner), args[:1]),
    "translate": _translate_estimate,
}


def guard_method(obj: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """Before a method call from a template: refuse amplifying calls; returns the (possibly materialised) args."""
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    if isinstance(owner, str | bytes):
        if name == "join" and args:
            items = args[0] if isinstance(args[0], Collection) else list(charge_iterations(args[0]))
            check_size(items)
            refuse_estimate(f"{type(owner).__name__}.join", join_estimate(owner, items))
            return (items, *args[1:]), kwargs
        estimate = METHOD_ESTIMATES.get(name)
        if estimate is not None:
            refuse_estimate(f"{type(owner).__name__}.{name}", estimate(owner, args, kwargs))
    elif isinstance(owner, int) and name == "to_bytes":
        refuse_estimate("int.to_bytes", as_int(args[0] if args else kwargs.get("length", 1)))
    return args, kwargs

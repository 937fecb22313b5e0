"""Template syntax, guarded: the operators ``*``, ``+``, ``**``, ``%``, the concatenation ``~`` (and block
bodies), and container literals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from poolboy.utils.template_guards.estimates import format_estimate
from poolboy.utils.template_guards.limits import MAX_POWER_BITS, MAX_SIZE, LimitError, budget
from poolboy.utils.template_guards.measure import check_length, check_size, measure, refuse_estimate


def _units(value: Any) -> int:
    return measure(value).units


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Before ``*``, ``+``, ``**`` and ``%``: refuse results over the limits, and containers whose logical size
    (shared references counted) would be over :data:`MAX_SIZE`."""
    if operator == "*":
        for sequence, count in ((left, right), (right, left)):
            if isinstance(sequence, str | list | tuple) and isinstance(count, int) and not isinstance(count, bool):
                times = max(count, 0)
                check_length(len(sequence) * times, "string" if isinstance(sequence, str) else "list")
                if not isinstance(sequence, str) and _units(sequence) * times > MAX_SIZE:
                    raise LimitError(f"value is too large (more than {MAX_SIZE} elements and characters)")
    elif operator == "+" and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
        check_length(len(left) + len(right), "string" if isinstance(left, str) else "list")
        if not isinstance(left, str) and _units(left) + _units(right) > MAX_SIZE:
            raise LimitError(f"value is too large (more than {MAX_SIZE} elements and characters)")
    elif operator == "**":
        big = isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1
        if big and right * abs(left).bit_length() > MAX_POWER_BITS:
            raise LimitError(f"{left} ** {right} is too large")
    elif operator == "%" and isinstance(left, str):
        arguments = right if isinstance(right, tuple) else (right,)
        refuse_estimate("% formatting", format_estimate(left, arguments))


def concat(parts: Iterable[Any]) -> str:
    """``~`` and the bodies of blocks, macros and ``{% set %}`` captures: the total length is checked before
    joining (a body looping over a megabyte string would otherwise be joined first)."""
    pieces = [part if isinstance(part, str) else str(part) for part in parts]
    total = sum(len(piece) for piece in pieces)
    refuse_estimate("concatenation", total)
    budget().charge(total)
    return "".join(pieces)


def built(value: Any) -> Any:
    """A list, tuple or dict literal of the template: its logical size is bounded like any other value."""
    check_size(value)
    return value

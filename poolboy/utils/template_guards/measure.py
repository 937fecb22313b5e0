"""Measuring values without building anything, and bounding what a guarded call returned.

Why measure logically: a value can be a small graph of shared references that expands to an astronomical size when
it is compared, sorted, printed or serialised, so every container a template builds gets a bounded logical size
(shared references counted every time they are reached), and every guarded call's result is bounded and charged to
the render's budget (:mod:`poolboy.utils.template_guards.limits`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from poolboy.utils.template_guards.limits import MAX_ITEMS, MAX_SIZE, MAX_STRING, LimitError, budget

_TICK_EVERY = 4096  # measurement steps between deadline checks

_T = TypeVar("_T")


@dataclass(frozen=True)
class Measure:
    """Upper bounds for a value: ``units`` (elements + characters), ``text`` (characters of its ``str``/JSON form,
    escapes included) and ``depth`` (nesting)."""

    units: int
    text: int
    depth: int


def _children(item: Any) -> list[Any] | None:
    if isinstance(item, Mapping):
        return [child for pair in item.items() for child in pair]
    if isinstance(item, list | tuple | set | frozenset):
        return list(item)
    return None


def _leaf(item: Any) -> tuple[int, int, int]:
    """(units, text, depth) of a scalar; a string's text allows for escaping inside a container's repr/JSON."""
    if isinstance(item, str | bytes):
        return len(item) + 1, 4 * len(item) + 2, 1
    if isinstance(item, int) and not isinstance(item, bool):
        return 1, item.bit_length() // 3 + 2, 1
    return 1, 64, 1


def measure(value: Any, limit: int = MAX_SIZE) -> Measure:
    """Measure ``value`` without building anything; refuse beyond ``limit`` units.

    Logical sizes count a shared reference every time it is reached (``[x, x]`` is twice ``x``), which is what a
    comparison, a sort or a serialisation would walk; computing them bottom-up once per distinct object keeps the
    measurement itself linear in the objects that really exist, iterative (no recursion) and deadline-checked.
    """
    if isinstance(value, str | bytes):
        if len(value) + 1 > limit:
            raise LimitError(f"value is too large (more than {limit} elements and characters)")
        return Measure(len(value) + 1, len(value), 1)
    if not isinstance(value, Mapping | list | tuple | set | frozenset):
        return Measure(*_leaf(value))
    current = budget()
    memo: dict[int, tuple[int, int, int]] = {}
    open_: set[int] = set()  # containers being measured (a cycle back to one counts as a scalar)
    stack: list[tuple[Any, bool]] = [(value, False)]
    steps = 0
    while stack:
        item, expanded = stack.pop()
        key = id(item)
        steps += 1
        if steps % _TICK_EVERY == 0:
            current.tick()
        if key in memo or (not expanded and key in open_):
            continue
        children = _children(item)
        if children is None:
            memo[key] = _leaf(item)
            continue
        if not expanded:
            open_.add(key)
            stack.append((item, True))
            stack.extend((child, False) for child in children if id(child) not in memo)
            continue
        open_.discard(key)
        sizes = [memo.get(id(child), (1, 64, 1)) for child in children]
        units = len(children) + 1 + sum(size[0] for size in sizes)
        if units > limit:
            raise LimitError(f"value is too large (more than {limit} elements and characters)")
        text = 2 * len(children) + 2 + sum(size[1] for size in sizes)
        memo[key] = (units, text, 1 + max((size[2] for size in sizes), default=0))
    return Measure(*memo[id(value)])


def check_size(value: Any, limit: int = MAX_SIZE) -> None:
    """Refuse a value whose logical size is over ``limit`` (see :func:`measure`)."""
    measure(value, limit)


def check_length(result_len: int, what: str) -> None:
    limit = MAX_STRING if what == "string" else MAX_ITEMS
    if result_len > limit:
        raise LimitError(f"{what} result too large ({result_len} > {limit})")


def refuse_estimate(what: str, estimate: int, limit: int = MAX_STRING) -> None:
    """The pre-call refusal: its message says "would produce", so tests can tell it fired before the operation."""
    if estimate > limit:
        raise LimitError(f"{what} would produce about {estimate} characters or items (limit {limit}): too large")


def account(result: _T) -> _T:
    """After a call: bound the result and charge what it produced to the render's budget."""
    if isinstance(result, str | bytes):
        check_length(len(result), "string")
        budget().charge(len(result))
    elif isinstance(result, list | tuple | Mapping):
        check_size(result)
        budget().charge(len(result))
    return result


def text_size(value: Any) -> int:
    """Upper bound of ``len(str(value))``: exact for strings, :func:`measure` for anything else."""
    if isinstance(value, str | bytes):
        return len(value)
    if _children(value) is None:
        return _leaf(value)[1]
    return measure(value).text


def as_int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default

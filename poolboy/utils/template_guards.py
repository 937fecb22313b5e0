"""Resource limits of the template sandbox: one render may never hold a worker longer or larger than its limit.

Why guards *before* the operation: a filter, a method or an operator runs as one C-level or library call that no
deadline can interrupt, so checking its result afterwards is too late — ``('a\\n' * 200000) | indent(10000)`` used to
run 11 s and allocate 3.8 GB before the size check saw it. So every operation whose output can grow with an
*argument* (output ≈ input × argument) estimates its output from its inputs first and refuses when the estimate is
over the limit. Operations whose output is at most a small constant times their input are only checked afterwards.

The audit, by family (Jinja2 3.1 built-ins plus Poolboy's filters and the methods reachable in the sandbox):

- estimated before the call: filters ``indent``, ``center``, ``replace``, ``format``, ``join``, ``wordwrap``,
  ``truncate``, ``urlize``, ``xmlattr``, ``batch`` (fill), ``slice``, ``sum`` (of sequences, which is quadratic),
  ``tojson``/``to_json``/``object`` (indent, separators), ``pprint``; str/bytes methods ``center``, ``ljust``,
  ``rjust``, ``zfill``, ``expandtabs``, ``replace``, ``join``, ``format``, ``format_map``, ``translate``;
  ``int.to_bytes``; operators ``*``, ``+``, ``**``, ``%``, ``~``; the ``lipsum`` global; JMESPath ``join``;
- bounded by the sandbox itself: ``range`` (100 000 items), attribute access (``__class__``, ``__globals__``,
  ``mro``… are unsafe), mutation of lists and dicts (immutable sandbox);
- at most a constant factor of their input, checked after the call: every other filter (``escape``,
  ``urlencode``, ``title``, ``upper``, ``string``, ``list``, ``sort``, ``unique``, ``map``, ``select``…), every Jinja
  test (comparisons, ``divisibleby``, ``in``…: no output at all), every other method.

On top of that, per top-level render (template vars rendered lazily share it): a wall-clock deadline checked at
every call, attribute or item access, operator, filter, loop step and inside every size measurement; a budget of
loop iterations; a budget of everything produced (characters of strings and items of containers made by guarded
operations, :data:`MAX_PRODUCED`), so that many operations each under the limit cannot add up to gigabytes; and a
logical-size limit on every container that template syntax builds (literals, ``*``, ``+``, filter results), so
that no value can be a small graph of shared references that expands to an astronomical size when it is compared,
sorted, printed or serialised.
"""

from __future__ import annotations

import contextvars
import inspect
import re
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jinja2.exceptions import SecurityError

MAX_STRING = 1024 * 1024  # characters in any one string produced inside a template, and in one render's output
MAX_ITEMS = 100_000  # elements in a list/tuple built by ``*`` or ``+``, lists made by ``batch``/``slice``
MAX_SIZE = 2_000_000  # logical size (elements + characters, shared references counted every time) of any value
MAX_PRODUCED = 32 * MAX_STRING  # characters and items produced by guarded operations in one render, in total
MAX_ITERATIONS = 1_000_000  # loop iterations per top-level render
MAX_POWER_BITS = 4096  # ``**`` results larger than this many bits are refused
MAX_INDENT = 64  # indentation of ``tojson``/``to_json`` output
MAX_EXPRESSION = 10_000  # characters of a ``json_query`` expression
TIME_LIMIT = 1.0  # seconds of wall clock per top-level render
_TICK_EVERY = 4096  # measurement steps between deadline checks


class LimitError(SecurityError):
    """A resource limit of the sandbox was hit."""


# ---------------------------------------------------------------------------------------------------- budget


@dataclass
class Budget:
    """Per top-level render limits, shared by nested renders of template vars."""

    deadline: float
    iterations: int = 0
    produced: int = 0
    var_depth: int = 0
    omit: str = field(default="")

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise LimitError(f"template took longer than {TIME_LIMIT:g}s")

    def charge(self, units: int) -> None:
        """Count ``units`` characters or items produced; refuse once the render has produced too much."""
        self.produced += units
        if self.produced > MAX_PRODUCED:
            raise LimitError(f"template produced more than {MAX_PRODUCED} characters and items in total")


BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("poolboy_template_budget", default=None)

_T = TypeVar("_T")


def new_budget() -> Budget:
    return Budget(deadline=time.monotonic() + TIME_LIMIT)


def budget() -> Budget:
    """The current render's budget; a callable used outside a render gets a fresh one."""
    return BUDGET.get() or new_budget()


def charge_iterations(iterable: Iterable[Any]) -> Iterator[Any]:
    """Every ``{% for %}`` step counts against the iteration budget; the deadline is checked every 1000 steps."""
    current = budget()
    for item in iterable:
        current.iterations += 1
        if current.iterations > MAX_ITERATIONS:
            raise LimitError(f"template loops ran more than {MAX_ITERATIONS} iterations")
        if current.iterations % 1000 == 0:
            current.tick()
        yield item


# ---------------------------------------------------------------------------------------------------- measuring


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


def _text_size(value: Any) -> int:
    """Upper bound of ``len(str(value))``: exact for strings, :func:`measure` for anything else."""
    if isinstance(value, str | bytes):
        return len(value)
    if _children(value) is None:
        return _leaf(value)[1]
    return measure(value).text


def _as_int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


# ---------------------------------------------------------------------------------------------------- estimates


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
    widest = max([*widths, *(_text_size(v) for v in values), 0])
    fields = fmt.count("%") + fmt.count("{")
    return len(fmt) + fields * widest


def replace_estimate(text: str, old: str, new: str, count: Any = None) -> int:
    occurrences = text.count(old) if old else len(text) + 1
    limit = _as_int(count, -1) if count is not None else -1
    if limit >= 0:
        occurrences = min(occurrences, limit)
    return len(text) + occurrences * max(0, len(new) - len(old))


def join_estimate(separator: str | bytes, items: Collection[Any]) -> int:
    return max(0, len(items) - 1) * len(separator) + sum(_text_size(item) for item in items)


def json_estimate(value: Any, indent: Any = None, separators: Any = None) -> int:
    """``json.dumps`` output bound: text, plus indentation (depth × indent per element), plus separators."""
    width = len(indent) if isinstance(indent, str) else _as_int(indent)
    if width > MAX_INDENT:
        raise LimitError(f"indent {width} too large (at most {MAX_INDENT})")
    separator = max((len(str(s)) for s in separators), default=2) if isinstance(separators, list | tuple) else 2
    size = measure(value)
    return size.text + size.units * (size.depth * width + separator + 1)


def _lines(text: str) -> int:
    return text.count("\n") + 1


def _indent_estimate(a: Mapping[str, Any]) -> int:
    text, width = str(a["s"]), a["width"]
    per_line = len(width) if isinstance(width, str) else max(0, _as_int(width))
    return len(text) + _lines(text) * per_line


def _wordwrap_estimate(a: Mapping[str, Any]) -> int:
    text = str(a["s"])
    width = max(1, _as_int(a["width"], 1))
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
    "center": (lambda a: max(len(str(a["value"])), _as_int(a["width"])), MAX_STRING),
    "replace": (lambda a: replace_estimate(str(a["s"]), str(a["old"]), str(a["new"]), a["count"]), MAX_STRING),
    "format": (lambda a: format_estimate(str(a["value"]), a["args"], a["kwargs"]), MAX_STRING),
    "join": (lambda a: join_estimate(str(a["d"]), a["value"]) if isinstance(a["value"], Collection) else 0, MAX_STRING),
    "wordwrap": (_wordwrap_estimate, MAX_STRING),
    "truncate": (lambda a: len(str(a["s"])) + len(str(a["end"])), MAX_STRING),
    "urlize": (_urlize_estimate, 4 * MAX_STRING),
    "xmlattr": (lambda a: 6 * measure(a["d"]).text, 4 * MAX_STRING),
    "batch": (lambda a: _as_int(a["linecount"]) if a["fill_with"] is not None else 0, MAX_ITEMS),
    "slice": (lambda a: _as_int(a["slices"]), MAX_ITEMS),
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


# ---------------------------------------------------------------------------------------------------- methods


def _width_estimate(owner: Sized, args: tuple, kwargs: Mapping[str, Any]) -> int:
    return max(len(owner), _as_int(args[0] if args else kwargs.get("width", 0)))


def _expandtabs_estimate(owner: str | bytes, args: tuple, kwargs: Mapping[str, Any]) -> int:
    tab = b"\t" if isinstance(owner, bytes) else "\t"
    tabsize = max(0, _as_int(args[0] if args else kwargs.get("tabsize", 8)))
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
        refuse_estimate("int.to_bytes", _as_int(args[0] if args else kwargs.get("length", 1)))
    return args, kwargs


# ---------------------------------------------------------------------------------------------------- operators


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


def guard_lipsum(func: Callable[..., str]) -> Callable[..., str]:
    def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # Jinja's parameter names
        refuse_estimate("lipsum", _as_int(n) * _as_int(max) * 12)
        return account(func(n, html, min, max))

    return lipsum

"""The template sandbox's limits and the budget of one render: deadline, loop iterations, everything produced.

Why a budget per top-level render (template vars rendered lazily share it): a wall-clock deadline checked at every
call, attribute or item access, operator, filter, loop step and inside every size measurement; a budget of loop
iterations; and a budget of everything produced (characters of strings and items of containers made by guarded
operations, :data:`MAX_PRODUCED`), so that many operations each under the limit cannot add up to gigabytes.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from jinja2.exceptions import SecurityError

MAX_STRING = 1024 * 1024  # characters in any one string produced inside a template, and in one render's output
MAX_ITEMS = 100_000  # elements in a list/tuple built by ``*`` or ``+``, lists made by ``hold``/``slice``
MAX_SIZE = 2_000_000  # logical size (elements + characters, shared references counted every time) of any value
MAX_PRODUCED = 32 * MAX_STRING  # characters and items produced by guarded operations in one render, in total
MAX_ITERATIONS = 1_000_000  # loop iterations per top-level render
MAX_POWER_BITS = 4096  # ``**`` results larger than this many bits are refused
MAX_INDENT = 64  # indentation of ``tojson``/``to_json`` output
MAX_EXPRESSION = 10_000  # characters of a ``json_query`` expression
TIME_LIMIT = 1.0  # seconds of wall clock per top-level render


class LimitError(SecurityError):
    """A resource limit of the sandbox was hit."""


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

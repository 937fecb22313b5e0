"""A script's declaration: its file by name and the names of its KEYS and ARGV, in the order the file reads them.

The declaration sits beside the Python that calls the script and is its one contract: a caller passes every key and
argument by name (``ADD.register(client).call(pending=..., active=..., msg_id=..., ...)``) and nothing but the
declaration knows a position, so a script that composes another package's Lua functions takes its values by the
names its own declaration gives them, never in an order some helper elsewhere must keep.
``tests/unit/test_redisscripts.py`` checks every declaration against what its file reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import redis

from redisscripts.source import source

T = TypeVar("T")


def as_is(reply: Any) -> Any:
    return reply


@dataclass(frozen=True)
class Call(Generic[T]):
    """One script run: the script as registered, its keys and arguments, and ``read`` turning its reply into the
    caller's value; a step of a :class:`workqueue.roundtrip.RoundTrip`, or run alone by :meth:`run`."""

    script: redis.commands.core.Script
    keys: list[Any]
    args: list[Any]
    read: Callable[[Any], T] = field(default=as_is)

    def run(self, client: Any = None) -> Any:
        """Run it now, on ``client`` (a pipeline, which answers on its ``execute``) or else the registering client;
        the raw reply."""
        return self.script(keys=self.keys, args=self.args, client=client)


@dataclass(frozen=True)
class Script:
    """The script in file ``name`` (:mod:`redisscripts.source`): ``keys`` name its ``KEYS[1..]``, ``args`` its
    ``ARGV[1..]``, and ``rest`` the list of arguments after those, if it takes one.

    A key or argument given as None is left out, which only the last ones may be (the work queue's optional queue
    list): the script finds it nil."""

    name: str
    keys: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    rest: str | None = None

    def __post_init__(self) -> None:
        given = self.parameters()
        if len(set(given)) != len(given):
            raise ValueError(f"{self.name}: a name declared twice in {given}")

    def parameters(self) -> tuple[str, ...]:
        return (*self.keys, *self.args, *((self.rest,) if self.rest else ()))

    @property
    def source(self) -> str:
        return source(self.name)

    def register(self, client: redis.Redis) -> Registered:
        return Registered(self, client.register_script(self.source))

    def order(self, values: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
        """``values`` by name as (KEYS, ARGV)."""
        unknown, missing = values.keys() - set(self.parameters()), set(self.parameters()) - values.keys()
        if unknown or missing:
            raise TypeError(f"{self.name}: unknown {sorted(unknown)}, missing {sorted(missing)}")
        keys = _leave_out([values[name] for name in self.keys], self.name)
        args = [values[name] for name in self.args]
        if self.rest is None:
            return keys, _leave_out(args, self.name)
        rest: Iterable[Any] = values[self.rest]
        return keys, [*_leave_out(args, self.name, trailing=False), *rest]


@dataclass(frozen=True)
class Registered:
    """A declared script registered with one client (redis-py loads it on first use and after a Redis restart)."""

    declared: Script
    script: redis.commands.core.Script

    def call(self, read: Callable[[Any], T] = as_is, /, **values: Any) -> Call[T]:
        """A run with ``values`` by name, its reply read by ``read``."""
        keys, args = self.declared.order(values)
        return Call(self.script, keys, args, read)

    def run(self, client: Any = None, /, **values: Any) -> Any:
        """Run it now with ``values`` by name (on ``client``, as :meth:`Call.run`); the raw reply."""
        return self.call(**values).run(client)


def _leave_out(values: list[Any], name: str, *, trailing: bool = True) -> list[Any]:
    """``values`` without the Nones at their end (when ``trailing``: else none may be None)."""
    count = len(values)
    while trailing and count and values[count - 1] is None:
        count -= 1
    if any(value is None for value in values[:count]):
        raise ValueError(f"{name}: only the last keys or arguments may be left out, given {values}")
    return values[:count]

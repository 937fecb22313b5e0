"""One Redis round trip of several steps, each answered by its own handle: ``r = trip.call(queue.add_call(k));
trip.send(); r.value``.

Every step is a :class:`redisscripts.Call` (a script with its keys and arguments, and how to read its reply) or a
plain command. Steps that must happen as one, with nothing of another client between them, go in together with
:meth:`RoundTrip.atomic`: they become one script. Consecutive scripts are sent as few EVALSHAs as
:data:`redisscripts.combined.MAX_COMBINED` allows (:mod:`redisscripts.combined`); a step that fails answers its error on
its own handle and the steps after it still run, as on a pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import redis

from redisscripts import Call
from redisscripts.combined import MAX_COMBINED, Source, combined_call, split_reply
from redisscripts.script import as_is

T = TypeVar("T")


class Reply(Generic[T]):
    """The answer to one step, once the round trip is sent: :attr:`value`, or the step's error."""

    def __init__(self, read: Callable[[Any], T]) -> None:
        self._read = read
        self._raw: Any = None
        self._sent = False

    def _set(self, raw: Any) -> None:
        self._raw, self._sent = raw, True

    @property
    def error(self) -> Exception | None:
        if not self._sent:
            raise RuntimeError("the round trip has not been sent")
        return self._raw if isinstance(self._raw, Exception) else None

    @property
    def value(self) -> T:
        """The step's answer as its call reads it; raises the step's error."""
        error = self.error
        if error is not None:
            raise error
        return self._read(self._raw)


@dataclass
class _Scripts:
    """Calls that go out as one EVALSHA (several: a combined script, atomic as one)."""

    calls: list[Call[Any]]
    replies: list[Reply[Any]]


@dataclass
class _Command:
    args: tuple[Any, ...]
    reply: Reply[Any]


class RoundTrip:
    """The steps of one round trip to ``client``, sent by :meth:`send` on one pipeline."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._steps: list[_Scripts | _Command] = []

    def call(self, call: Call[T]) -> Reply[T]:
        return self.atomic(call)[0]

    def atomic(self, *calls: Call[Any]) -> list[Reply[Any]]:
        """Steps that run as one: no command of another client falls between them."""
        if len(calls) > MAX_COMBINED:
            raise ValueError(f"at most {MAX_COMBINED} calls run as one script")
        replies = [Reply(call.read) for call in calls]
        self._steps.append(_Scripts(list(calls), replies))
        return replies

    def command(self, *args: Any) -> Reply[Any]:
        """A plain Redis command (``"DEL", key``)."""
        reply: Reply[Any] = Reply(as_is)
        self._steps.append(_Command(args, reply))
        return reply

    def __len__(self) -> int:
        return len(self._steps)

    def send(self) -> None:
        """Send every step; raises only when Redis cannot be reached (each step's own error is on its reply).

        A script this process has not sent to this Redis yet is loaded first, in the same round trip, so every step
        runs in order. A Redis that forgot its scripts since (restarted, flushed) answers NOSCRIPT to those steps
        only: they are sent again once loaded, after the steps that followed them."""
        units = _merge(self._steps)
        scripts = {_one_script(unit.calls)[0] for unit in units if isinstance(unit, _Scripts)}
        loads = [script for script in scripts if (id(self.client.connection_pool), script.sha) not in _LOADED]
        raws: list[Any] = [None] * len(units)
        todo = list(range(len(units)))
        for attempt in (1, 2):
            pipe = self.client.pipeline(transaction=False)
            for script in loads:
                pipe.script_load(script.script)
            for i in todo:
                unit = units[i]
                if isinstance(unit, _Command):
                    pipe.execute_command(*unit.args)
                else:
                    script, keys, args = _one_script(unit.calls)
                    pipe.evalsha(script.sha, len(keys), *keys, *args)
            answers = pipe.execute(raise_on_error=False)
            _LOADED.update((id(self.client.connection_pool), script.sha) for script in loads)
            for i, raw in zip(todo, answers[len(loads):], strict=True):
                raws[i] = raw
            todo = [i for i in todo if isinstance(raws[i], redis.exceptions.NoScriptError)]
            if not todo or attempt == 2:
                break
            loads = [_one_script(unit.calls)[0] for unit in (units[i] for i in todo) if isinstance(unit, _Scripts)]
        for unit, raw in zip(units, raws, strict=True):
            if isinstance(unit, _Command):
                unit.reply._set(raw)
            elif len(unit.calls) == 1:
                unit.replies[0]._set(raw)
            else:
                for reply, part in zip(unit.replies, split_reply(raw, len(unit.calls)), strict=True):
                    reply._set(part)
        self._steps = []


#: (connection pool, script SHA1) of the scripts this process has loaded into that pool's Redis
_LOADED: set[tuple[int, str]] = set()


def _one_script(calls: Sequence[Call[Any]]) -> tuple[Source, list[Any], list[Any]]:
    if len(calls) == 1:
        return calls[0].script, calls[0].keys, calls[0].args
    return combined_call([(call.script, call.keys, call.args) for call in calls])


def _merge(steps: list[_Scripts | _Command]) -> list[_Scripts | _Command]:
    """Consecutive script steps as few EVALSHAs as :data:`MAX_COMBINED` parts allow; an atomic step is never split."""
    units: list[_Scripts | _Command] = []
    for step in steps:
        last = units[-1] if units else None
        if isinstance(step, _Scripts) and isinstance(last, _Scripts) \
                and len(last.calls) + len(step.calls) <= MAX_COMBINED:
            units[-1] = _Scripts(last.calls + step.calls, last.replies + step.replies)
        else:
            units.append(_Scripts(list(step.calls), list(step.replies)) if isinstance(step, _Scripts) else step)
    return units


def send_all(client: redis.Redis, calls: Sequence[Call[T]]) -> list[T]:
    """Several calls in one round trip; their values in order (raises the first error)."""
    trip = RoundTrip(client)
    replies = [trip.call(call) for call in calls]
    trip.send()
    return [reply.value for reply in replies]

"""Several Lua scripts as one: a script made of theirs, which runs each in turn and answers each one's reply.

:class:`workqueue.roundtrip.RoundTrip` sends consecutive scripts this way: one EVALSHA for up to
:data:`MAX_COMBINED` of them, atomic together. Each part keeps its own keys and arguments and runs in a ``pcall``: a
part that fails answers its error and the parts after it still run (a Redis script is not a transaction: a failing
part's writes before its error stay). The combined script is one more in Redis's script cache per set of parts: each
part's source as a function of its own ``KEYS`` and ``ARGV`` in a table ``parts``, then the runner
(``redisscripts/combined.lua``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

import redis

from redisscripts.source import text

#: the most scripts one combined EVALSHA runs: a long batch of watch events stays a few short scripts, so other
#: clients' commands never wait long behind one
MAX_COMBINED = 32


class Source(Protocol):
    """A Lua script as redis-py's ``register_script`` gives it: its source and its SHA1."""

    @property
    def script(self) -> Any: ...

    @property
    def sha(self) -> str: ...


#: (script, keys, args)
ScriptCall = tuple[Source, list[Any], list[Any]]


@dataclass(frozen=True)
class CombinedScript:
    """A combined script's source and its SHA1."""

    script: str
    sha: str


@cache
def _combined(sources: tuple[str, ...]) -> CombinedScript:
    """One script running any of ``sources``, each as a function of its own ``KEYS`` and ``ARGV``."""
    parts = [f"parts[{i}] = function(KEYS, ARGV)\n{source}\nend" for i, source in enumerate(sources, 1)]
    source = "\n".join(["local parts = {}", *parts, text("combined")])
    return CombinedScript(source, hashlib.sha1(source.encode()).hexdigest())


def combined_call(calls: Sequence[ScriptCall]) -> ScriptCall:
    """``calls`` as one (script, keys, args); :func:`split_reply` reads its reply."""
    order: dict[str, int] = {}
    sources: list[str] = []
    for script, _, _ in calls:
        if script.sha not in order:
            order[script.sha] = len(sources) + 1
            sources.append(script.script)
    keys: list[Any] = []
    args: list[Any] = [len(calls)]
    for script, call_keys, call_args in calls:
        keys.extend(call_keys)
        args += [order[script.sha], len(call_keys), len(call_args), *call_args]
    return _combined(tuple(sources)), keys, args


def split_reply(reply: Any, count: int) -> list[Any]:
    """The replies of a combined call's ``count`` parts, each as its script alone would have answered it (an error
    as a :class:`redis.ResponseError`); the combined call's own error stands for every part."""
    if isinstance(reply, Exception):
        return [reply] * count
    replies: list[Any] = []
    for part in reply:
        ok, value = (part[0], part[1]) if len(part) > 1 else (part[0], None)
        replies.append(value if int(ok) == 1 else redis.exceptions.ResponseError(_text(value)))
    return replies


def _text(value: bytes | str | None) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

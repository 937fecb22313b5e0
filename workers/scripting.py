"""Running the stack's Lua scripts: several on one pipeline, or several as one script.

The watcher's intake and a run's last round trip each send a handful of scripts at once: an event's cache write and
the OBSERVE of every key it wakes; a run's cache writes, the WAKEs of the keys it wakes, its deadline and DONE.
:func:`evalsha_pipelined` sends them as one EVALSHA each on one pipeline (one round trip). :func:`evalsha_combined`
sends them as *one* EVALSHA per :data:`MAX_COMBINED` scripts: a script made of theirs, which runs each in turn and
answers each one's reply. Same round trips, same order, same replies, but each EVALSHA is a Redis command of its own,
and Redis's commands per claim decide how far the workers scale out on one Redis (benchmarks/README.md).

Each part keeps its own keys and arguments and runs in a ``pcall``: a part that fails answers its error, as on a
pipeline, and the parts after it still run. A Redis script is not a transaction either way, so a failing part's
writes before its error stay, as they did on the pipeline. The combined script is one more in Redis's script cache
per set of parts (a few: the intake's and the end of a run's).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import redis

from cache.store import ScriptCall

#: the most scripts one combined EVALSHA runs: a long batch of watch events stays a few short scripts, so other
#: clients' commands never wait long behind one
MAX_COMBINED = 32

_RUNNER = """
local out, at, key_at = {}, 2, 1
for i = 1, tonumber(ARGV[1]) do
  local part, nkeys, nargs = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  at = at + 3
  local keys, args = {}, {}
  for j = 1, nkeys do keys[j] = KEYS[key_at + j - 1] end
  for j = 1, nargs do args[j] = ARGV[at + j - 1] end
  key_at, at = key_at + nkeys, at + nargs
  local ok, reply = pcall(parts[part], keys, args)
  if ok then
    out[i] = {1, reply}
  else
    out[i] = {0, type(reply) == 'table' and reply.err or tostring(reply)}
  end
end
return out
"""


@dataclass(frozen=True)
class CombinedScript:
    """What :func:`evalsha_pipelined` needs of a script: its source and its SHA1."""

    script: str
    sha: str


@cache
def _combined(sources: tuple[str, ...]) -> CombinedScript:
    """One script running any of ``sources``, each as a function of its own ``KEYS`` and ``ARGV``."""
    parts = [f"parts[{i}] = function(KEYS, ARGV)\n{source}\nend" for i, source in enumerate(sources, 1)]
    source = "local parts = {}\n" + "\n".join(parts) + _RUNNER
    return CombinedScript(source, hashlib.sha1(source.encode()).hexdigest())


def combined_call(calls: Sequence[ScriptCall]) -> ScriptCall:
    """``calls`` as one (script, keys, args); :func:`split_reply` reads its reply."""
    order: dict[str, int] = {}
    sources: list[str] = []
    for script, _, _ in calls:
        if script.sha not in order:
            order[script.sha] = len(sources) + 1
            sources.append(script.script)
    keys: list[str] = []
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


def evalsha_combined(client: redis.Redis, calls: Sequence[ScriptCall], raise_on_error: bool = True) -> list[Any]:
    """:func:`evalsha_pipelined`'s replies for ``calls``, sent as one EVALSHA per :data:`MAX_COMBINED` of them."""
    if not calls:
        return []
    chunks = [calls[i:i + MAX_COMBINED] for i in range(0, len(calls), MAX_COMBINED)]
    combined = [combined_call(chunk) if len(chunk) > 1 else chunk[0] for chunk in chunks]
    replies: list[Any] = []
    for chunk, reply in zip(chunks, evalsha_pipelined(client, combined, raise_on_error=False), strict=True):
        replies += split_reply(reply, len(chunk)) if len(chunk) > 1 else [reply]
    if raise_on_error:
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
    return replies


def evalsha_pipelined(client: redis.Redis, calls: Sequence[ScriptCall], raise_on_error: bool = True) -> list[Any]:
    """Scripts (``(script, keys, args)`` each) in one pipelined round trip, each still atomic on its own.

    redis-py's pipeline asks ``SCRIPT EXISTS`` for its scripts before every execution (one more command each time);
    a script is there after its first use, so send EVALSHA directly, and on a NOSCRIPT (a Redis that restarted or
    was flushed) load that script and send again only the calls that did not run: the others have taken effect.
    With ``raise_on_error=False`` a failed script's reply is its exception."""
    replies: list[Any] = [None] * len(calls)
    todo = list(range(len(calls)))
    for attempt in (1, 2):
        pipe = client.pipeline(transaction=False)
        for i in todo:
            script, keys, args = calls[i]
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        for i, reply in zip(todo, pipe.execute(raise_on_error=False), strict=True):
            replies[i] = reply
        todo = [i for i in todo if isinstance(replies[i], redis.exceptions.NoScriptError)]
        if not todo or attempt == 2:
            break
        for script in {id(calls[i][0]): calls[i][0] for i in todo}.values():
            client.script_load(script.script)
    if raise_on_error:
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
    return replies


def _text(value: bytes | str | None) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

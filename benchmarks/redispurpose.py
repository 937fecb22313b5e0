"""Redis commands by purpose: what each command the stack sent was *for* (broker, work queue, own writes, cache, ...).

``INFO commandstats`` (:mod:`benchmarks.redisops`) counts commands by name only: an ``HSET`` may be kombu recording
an unacked message or the watcher writing the cache. ``MONITOR`` shows every command with its keys, including the
commands a Lua script runs (logged right after the ``EVALSHA`` that runs them, from the ``lua`` client), so each
is classified by its key (a script's inner commands too; those without a telling key by the script's first key).
``MONITOR`` costs Redis time, so the benchmark attaches it only when asked (``claims.py --redis-purposes``), and
those runs' timings are not the figures to compare.
"""

from __future__ import annotations

import collections
import hashlib
import re
import threading
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import redis

from workqueue import keyspace

#: a MONITOR line: ``<time> [<db> <client>] "CMD" "arg" ...``
_LINE = re.compile(r'^\d+\.\d+ \[\d+ (?P<client>[^\]]+)\] (?P<args>.*)$')
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')

#: (key prefix, purpose), first match wins
_PREFIXES: tuple[tuple[str, str], ...] = (
    (keyspace.OWN_WRITES, "own writes"),
    (keyspace.DUE, "delaying queue"),
    (keyspace.QUEUE, "work queue"),
    (keyspace.RUN_LOG, "work queue"),
    (keyspace.CACHE, "cache"),
    (keyspace.BEAT, "beat"),
    ("unacked", "broker: unacked"),
    ("_kombu.", "broker"),
    ("/", "broker: task events"),  # PUBLISH /<db>.celeryev/...
)
#: commands with no key, or whose key says nothing: the broker's consuming and pipelining
_KEYLESS = {"BRPOP": "broker", "MULTI": "broker: unacked", "EXEC": "broker: unacked", "PING": "connections",
            "HELLO": "connections", "CLIENT": "connections", "SCRIPT": "script loads"}
#: the benchmark's own commands (as in :mod:`benchmarks.redisops`)
OWN = {"INFO", "MONITOR"}
#: every queue list a worker consumes (kombu appends ``\x06\x16<priority>`` for the priority steps)
QUEUE_NAMES = ("claims", "handles", "pools", "providers", "scalings", "periodic")


def purpose_of(command: str, key: str) -> str:
    """The purpose of one command, from its name and first key."""
    if command in _KEYLESS:
        return _KEYLESS[command]
    for prefix, purpose in _PREFIXES:
        if key.startswith(prefix):
            return purpose
    if key.split("\x06")[0].split("\\x06")[0] in QUEUE_NAMES:
        return "broker"
    return "other"


#: the parts of a key that name one object or message (hash tags, uids, numbers), for :func:`key_shape`
_VARIABLE = re.compile(r"\{[^}]*\}|[0-9a-f]{8}-[0-9a-f-]{27}|\d+")


def key_shape(key: str) -> str:
    """A key with what names one object or message left out (``poolboy:queue:{…}:pending``), so keys group by
    their role."""
    shape = _VARIABLE.sub("…", key)
    return ":".join(shape.split(":")[:4])


@cache
def script_names() -> dict[str, str]:
    """SHA1 -> name (``workqueue/start``) of every Lua script the stack may run, so ``EVALSHA`` lines say which
    script ran."""
    from redisscripts import source

    return {hashlib.sha1(source.source(name).encode()).hexdigest(): name for name in source.names()}


class Tally:
    """Commands by purpose, fed one command at a time in the order Redis ran them; ``detail`` counts them by purpose,
    command and key shape (``work queue: SET poolboy:queue:…:pending``), which says what to cut."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.detail: collections.Counter[str] = collections.Counter()
        self._script = "other"  # the purpose of the script whose inner commands follow
        self._script_key = ""

    def feed(self, lua: bool, args: list[str]) -> None:
        """One command: ``lua`` when a script ran it, ``args`` its name and arguments."""
        command = args[0].upper()
        if command in OWN:
            return
        key = args[1] if len(args) > 1 and command not in _KEYLESS else ""
        if lua:  # by its own key where it says something (a work queue script's LPUSH publishes), else the script's
            own = purpose_of(command, key) if key else "other"
            self._count(self._script if own == "other" else own, f"  {command} {key_shape(key)}")
            return
        if command in ("EVALSHA", "EVAL"):
            key = args[3] if len(args) > 3 and args[2] != "0" else ""
            self._script = purpose_of(command, key)
            name = script_names().get(args[1], "") if command == "EVALSHA" and len(args) > 1 else ""
            self._count(self._script, f"{command} {name or key_shape(key)}")
            return
        self._count(purpose_of(command, key), f"{command} {key_shape(key)}")

    def _count(self, purpose: str, what: str) -> None:
        self.counts[purpose] += 1
        self.detail[f"{purpose}: {what}"] += 1


def classify(lines: Iterable[str]) -> collections.Counter[str]:
    """Commands by purpose from ``redis-cli monitor`` output."""
    tally = Tally()
    for line in lines:
        match = _LINE.match(line)
        args = _ARG.findall(match["args"]) if match else []
        if args:
            tally.feed(match["client"] == "lua", args)
    return tally.counts


def per_claim(counts: collections.Counter[str], n: int) -> dict[str, float]:
    """``total`` first, then by purpose, largest first."""
    return {"total": round(sum(counts.values()) / n, 2),
            **{purpose: round(count / n, 2) for purpose, count in counts.most_common()}}


class Monitor:
    """``MONITOR`` on a connection of its own, classifying as it reads."""

    def __init__(self, url: str, log: Path | None = None) -> None:
        self.client = redis.Redis.from_url(url)
        self.log = log.open("a") if log else None
        self.tally = Tally()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="redis-monitor", daemon=True)
        self.thread.start()
        self.ready.wait(10)

    def _run(self) -> None:
        with self.client.monitor() as monitor:
            self.ready.set()
            while not self.stopped.is_set():
                try:
                    entry = monitor.next_command()
                except (redis.ConnectionError, redis.TimeoutError, ValueError):
                    return
                with self.lock:
                    self.tally.feed(entry.get("client_type") == "lua", entry["command"].split(" "))
                if self.log:
                    self.log.write(f"{entry['time']:.6f} {entry.get('client_type', '')} {entry['command']}\n")

    def counts(self) -> collections.Counter[str]:
        """The commands since the monitor started, by purpose."""
        with self.lock:
            return collections.Counter(self.tally.counts)

    def detail(self) -> collections.Counter[str]:
        """The commands since the monitor started, by purpose, command and key shape."""
        with self.lock:
            return collections.Counter(self.tally.detail)

    def close(self) -> None:
        self.stopped.set()
        self.client.close()
        if self.log:
            self.log.close()

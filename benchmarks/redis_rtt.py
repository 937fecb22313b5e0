"""Sequential Redis round trips on a warm bind's critical path, from ``MONITOR`` (``claims.py --workloads RTT``).

Every Redis command the stack sends shows up in ``MONITOR`` as ``<epoch> [<db> <client addr>] "CMD" "arg" ...``
(commands run by Lua scripts as ``[<db> lua]``). With the latency proxy (:mod:`benchmarks.latency_proxy`)
between the stack and Redis, a client's commands that depend on a reply arrive at least 2·D apart, while the
commands of one pipeline arrive together: so, per client connection, commands less than D apart are one round
trip. Across the whole stack, the commands between the claim's create and its bind, merged in time and grouped
the same way, count the sequential round trips on the path (an upper bound: unrelated background traffic, such
as beat's 1 s due sweep, lands in the window too; the per-connection breakdown shows it).

Purpose of a command, from its first key: ``broker`` (Celery queues, ``unacked``, kombu bindings, pidbox),
``work queue`` (``work queue:``), ``own writes`` (``selfwrites:``), ``index`` (``poolboy:cache:i:``, ``…:resv:``),
``cache`` (``poolboy:cache:``, ``poolboy:epoch``), ``due`` (the delaying queue ZSET), ``beat`` (``poolboy:beat:``),
``connection`` (no key: PING, CLIENT, SELECT, SCRIPT, INFO…), else ``other``.
"""

from __future__ import annotations

import collections
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from workqueue import keyspace

LINE = re.compile(r'^\+?(?P<ts>\d+\.\d+) \[(?P<db>\d+) (?P<client>[^\]]+)\] (?P<rest>.*)$')
ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
QUEUES = ("claims", "handles", "pools", "providers", "scalings", "periodic", "celery")
#: kombu's separator between a queue name and its priority (``claims\x06\x163``), as MONITOR prints it
PRIORITY_SEP = "\\x06\\x16"
KEYLESS = {"ping", "client", "select", "script", "info", "hello", "auth", "multi", "exec", "discard", "time",
           "command", "config", "monitor", "readonly", "echo", "quit", "reset", "dbsize", "flushall", "flushdb"}
PREFIXES = ((keyspace.DUE, "due"), (keyspace.QUEUE, "work queue"), (keyspace.RUN_LOG, "work queue"),
            (keyspace.OWN_WRITES, "own writes"), (keyspace.CACHE_INDEXES, "index"),
            (keyspace.RESERVATIONS, "index"), (keyspace.CACHE, "cache"), (keyspace.EPOCH, "cache"),
            (keyspace.BEAT, "beat"), ("_kombu.binding", "broker"), ("unacked", "broker"),
            ("celeryev", "broker"))


@dataclass(frozen=True)
class Command:
    ts: float
    client: str  # "127.0.0.1:54321", or "lua" inside a script
    name: str  # lower case
    args: tuple[str, ...]

    @property
    def key(self) -> str | None:
        if self.name in KEYLESS:
            return None
        if self.name in ("eval", "evalsha", "fcall"):  # the first key, else the first argument (a key prefix)
            return self.args[2] if len(self.args) > 2 else None
        return self.args[0] if self.args else None


def parse_line(line: str) -> Command | None:
    """One MONITOR line (with or without the leading ``+`` of its RESP framing); None for anything else."""
    match = LINE.match(line.strip())
    if not match:
        return None
    words = ARG.findall(match.group("rest"))
    if not words:
        return None
    return Command(float(match.group("ts")), match.group("client"), words[0].lower(), tuple(words[1:]))


def purpose(command: Command) -> str:
    key = command.key
    if key is None:
        return "connection"
    for prefix, name in PREFIXES:
        if key.startswith(prefix):
            return name
    base = key.split(PRIORITY_SEP, 1)[0]
    if base in QUEUES or base.endswith(".pidbox"):
        return "broker"
    return "other"


def round_trips(commands: list[Command], gap_s: float) -> list[list[Command]]:
    """Commands (in time order) grouped into round trips: a new one starts after a pause longer than ``gap_s``."""
    groups: list[list[Command]] = []
    for command in sorted(commands, key=lambda c: c.ts):
        if groups and command.ts - groups[-1][-1].ts <= gap_s:
            groups[-1].append(command)
        else:
            groups.append([command])
    return groups


def describe(group: list[Command]) -> str:
    """``work queue: evalsha work queue:{…}:pending`` for each distinct (purpose, command, key) of a round trip."""
    seen = dict.fromkeys(f"{purpose(c)}: {c.name} {c.key or ''}".rstrip() for c in group)
    return " | ".join(seen)


def _trips(groups: list[list[Command]], start: float) -> list[str]:
    return [f"+{(group[0].ts - start) * 1000:.1f} ms {describe(group)}" for group in groups]


def analyse(commands: list[Command], start: float, end: float, gap_s: float,
            names: dict[str, str] | None = None, background: tuple[str, ...] = ("beat",)) -> dict[str, Any]:
    """The commands sent between ``start`` and ``end`` (epoch s): by purpose and command, round trips per
    client connection (named through ``names`` when known), and the merged path's round trips, with and
    without the ``background`` components' connections (beat sends its schedule on its own clock)."""
    window = [c for c in commands if start <= c.ts <= end]
    sent = [c for c in window if c.client != "lua"]
    names = names or {}
    by_client: dict[str, list[Command]] = collections.defaultdict(list)
    for command in sent:
        by_client[command.client].append(command)
    path = round_trips(sent, gap_s)
    foreground = round_trips([c for c in sent if names.get(c.client) not in background], gap_s)
    return {
        "window_s": round(end - start, 4), "gap_ms": gap_s * 1000, "commands": len(sent),
        "commands_in_scripts": len(window) - len(sent),
        "by_purpose": dict(collections.Counter(purpose(c) for c in sent).most_common()),
        "by_purpose_command": dict(collections.Counter(f"{purpose(c)} {c.name}" for c in sent).most_common()),
        "clients": {f"{names.get(client, '?')} {client}": {
            "commands": len(cmds), "round_trips": len(trips := round_trips(cmds, gap_s)),
            "trips": _trips(trips, start)}
            for client, cmds in sorted(by_client.items(), key=lambda item: item[1][0].ts)},
        "critical_path": {"round_trips": len(path), "trips": _trips(path, start)},
        "critical_path_without_background": {"without": list(background), "round_trips": len(foreground),
                                             "trips": _trips(foreground, start)},
    }


class Monitor:
    """A raw ``MONITOR`` connection read by a thread; :meth:`stop` returns the parsed commands."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.sendall(b"MONITOR\r\n")
        self.lines: list[str] = []
        self._running = True
        self._thread = threading.Thread(target=self._read, daemon=True)

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def _read(self) -> None:
        buffer = b""
        with self.sock:
            while self._running:
                try:
                    chunk = self.sock.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buffer += chunk
                *complete, buffer = buffer.split(b"\r\n")
                self.lines.extend(line.decode(errors="replace") for line in complete)

    def stop(self) -> list[Command]:
        time.sleep(0.2)  # the last commands' lines may still be on their way
        self._running = False
        self.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        return [c for c in (parse_line(line) for line in self.lines) if c is not None]

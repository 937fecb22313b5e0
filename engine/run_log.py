"""One log line per reconcile: the object, what became of the run, how long it took, how many writes it made.

It replaces Celery's own per-task lines ("Task … received", "Task … succeeded", which name a task id and are
demoted to DEBUG in :mod:`workers.app`). Levels are chosen so an idle cluster is quiet and a busy one readable:

* a run that wrote to the API (it changed something): INFO; a converged run that wrote nothing (most periodic
  re-runs): DEBUG;
* a transient failure: INFO (the run is retried with backoff; an unexpected exception is also logged with its
  traceback by :mod:`workers.tasks`);
* a permanent (user-fixable) error: WARNING the first time, whenever its reason or message changes, and again at
  most once per the re-check interval it announces; DEBUG in between. The periodic sweeps re-run every pool every
  10 s and every claim every 60 s, so without this the same WARNING would repeat at their pace. The memory is a
  Redis key per work key that expires after the re-check interval, so all worker processes and replicas share it.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from engine.outcome import Failed, Outcome, Refused, Succeeded
from poolboy.keys import parse
from poolboy.logs import bind_key
from poolboy.observability import on_api_request
from poolboy.result import PermanentError
from workqueue import keyspace

log = logging.getLogger("workers.reconcile")

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class Run:
    """What one reconcile did that its log line reports."""

    key: str
    writes: int = 0


_current: contextvars.ContextVar[Run | None] = contextvars.ContextVar("poolboy_run", default=None)


def _count_write(method: str, code: int) -> None:
    run = _current.get()
    if run is not None and method.upper() in WRITE_METHODS and 200 <= code <= 299:
        run.writes += 1


def install() -> None:
    """Count the successful API writes of the run in progress in each thread (Events are sent from a background
    thread, so they do not count)."""
    on_api_request(_count_write)


@contextmanager
def running(key: str) -> Iterator[Run]:
    """The block is one run of ``key``: every record logged in it names the object; its writes are counted."""
    run = Run(key)
    token = _current.set(run)
    try:
        with bind_key(key):
            yield run
    finally:
        _current.reset(token)


def requeue_text(at: datetime | None) -> str:
    if at is None:
        return "done"
    return "requeue at " + at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def report(run: Run, outcome: str, seconds: float, level: int | None = None) -> None:
    """The run's one line: ``claim demo/hello: done in 12 ms, 2 writes``."""
    kind, namespace, name = parse(run.key)
    if level is None:
        level = logging.INFO if run.writes else logging.DEBUG
    writes = f", {run.writes} write{'s' if run.writes != 1 else ''}" if run.writes else ""
    log.log(level, "%s %s/%s: %s in %.0f ms%s", kind, namespace, name, outcome, seconds * 1000, writes)


def logged_key(key: str) -> str:
    """Redis key of the last permanent error announced for ``key``; a successful run forgets it, so a later error is
    news again, even the same one."""
    return keyspace.logged_error(key)


def _fingerprint(error: PermanentError) -> str:
    return hashlib.sha1(f"{error.reason}\0{error.message}".encode(), usedforsecurity=False).hexdigest()[:16]


def permanent_level(client: redis.Redis, key: str, error: PermanentError, recheck_after: float) -> int:
    """WARNING when this error is news for ``key`` (first seen, changed, or last announced more than its re-check
    interval ago), DEBUG otherwise. Redis away: WARNING (better a repeat than a lost warning)."""
    memory, fingerprint, ttl = logged_key(key), _fingerprint(error), max(1, int(recheck_after))
    try:
        if client.set(memory, fingerprint, ex=ttl, nx=True):
            return logging.WARNING
        previous = client.get(memory)
        if previous is not None and (previous.decode() if isinstance(previous, bytes) else previous) == fingerprint:
            return logging.DEBUG
        client.set(memory, fingerprint, ex=ttl)
    except redis.RedisError:
        pass
    return logging.WARNING




def describe(outcome: Outcome, client: redis.Redis, key: str) -> tuple[str, int | None]:
    """What the run's line says happened, and its level (None: INFO if the run wrote, else DEBUG)."""
    match outcome:
        case Succeeded(requeue_at=None):
            return "done", None
        case Succeeded(requeue_at=at):
            return requeue_text(at), None
        case Failed(text=text):
            return text, logging.INFO
        case Refused(error=error, recheck_after=after):
            return (f"permanent error {error.reason}: {error.message} (re-check in {after:g}s)",
                    permanent_level(client, key, error, after))
    return "handed back (worker stopping)", logging.INFO

"""Trivial, instrumented reconcilers for the engine's integration tests (``poolboy worker --reconcilers
<this>:RECONCILERS``, ``engine_settings.RECONCILERS``).

Each run appends ``{"e": "start"|"end", "t": epoch, "pid": pid, "task": Celery task id}`` to the Redis list
``runs:<key>``; what a run does
is read from the hash ``behave:<key>``:

* ``sleep`` seconds (``sleep_first``: only on the first run; ``sleep_range``: "lo,hi" uniform random), at the run's
  stop points as a run making API requests would (:func:`poolboy.utils.cancellation.wait`)
* ``requeue_in_once``: return ``Result(requeue_at=now + x)`` once (the field is consumed)
* ``raise``: ``permanent`` (with ``recheck_after``) or ``transient`` (with ``retry_after``); ``fail_times`` limits
  how many runs raise
* ``enqueue``: comma-separated keys returned in ``Result.wake``
* ``promise``: comma-separated keys the run promises to wake (``ctx.will_wake``), as a claim creating its handle does
* ``event``: emit a Kubernetes Event with this reason about a ConfigMap named like the key (``ctx.events``)
* ``kube``: read the object from the API server with ``ctx.kube`` and store its ``test/value`` annotation in
  ``observed:<key>`` (convergence tests); also done for every namespace starting with the worker's
  ``ENGINE_TEST_OBSERVE_PREFIX``, a rule that survives a Redis FLUSHALL

The helpers below are shared by the engine tests (reading runs, waiting for quiescence).
"""

from __future__ import annotations

import json
import os
import random
import time
from datetime import UTC, datetime
from functools import cache
from typing import Any

import redis
from celery import current_task

from poolboy.context import Context
from poolboy.keys import KINDS
from poolboy.result import PermanentError, Result, TransientError
from poolboy.utils import cancellation
from workqueue import keyspace


@cache
def _redis() -> redis.Redis:
    from engine.redis_client import client
    from poolboy.settings import Settings

    return client(Settings.from_env(), decode_responses=True)  # TLS, password or Sentinel as the worker has it


def _record(key: str, event: str) -> int:
    task = current_task.request.id if current_task else None
    return _redis().rpush(f"runs:{key}", json.dumps({"e": event, "t": time.time(), "pid": os.getpid(), "task": task}))


def _sleep_for(behave: dict[str, str], run_number: int) -> float:
    if "sleep_range" in behave:
        low, high = (float(x) for x in behave["sleep_range"].split(","))
        return random.uniform(low, high)
    if "sleep_first" in behave:
        return float(behave["sleep_first"]) if run_number == 1 else 0.0
    return float(behave.get("sleep", 0))


def _maybe_raise(r: redis.Redis, key: str, behave: dict[str, str]) -> None:
    kind = behave.get("raise")
    if not kind:
        return
    if "fail_times" in behave and r.hincrby(f"behave:{key}", "failed", 1) > int(behave["fail_times"]):
        return
    if kind == "permanent":
        raise PermanentError("TestPermanent", "told to fail", recheck_after=float(behave.get("recheck_after", 300)))
    retry_after = behave.get("retry_after")
    raise TransientError("told to fail", retry_after=float(retry_after) if retry_after else None)


def _observe(ctx: Context, kind: str, namespace: str, name: str) -> None:
    obj = ctx.kube.get(ctx.settings.api_version, KINDS[kind], name, namespace)
    value = (obj["metadata"].get("annotations") or {}).get("test/value", "")
    _redis().set(f"observed:{kind}/{namespace}/{name}", value)


def _make(kind: str):
    def reconcile(ctx: Context, namespace: str, name: str) -> Result:
        key = f"{kind}/{namespace}/{name}"
        r = _redis()
        behave = r.hgetall(f"behave:{key}")
        run_number = r.incr(f"runcount:{key}")
        _record(key, "start")
        try:
            cancellation.wait(_sleep_for(behave, run_number))
            if behave.get("kube") or namespace.startswith(os.environ.get("ENGINE_TEST_OBSERVE_PREFIX", "\0")):
                _observe(ctx, kind, namespace, name)
            if behave.get("event"):
                ctx.events.emit({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": name, "namespace": namespace}},
                                behave["event"], f"emitted by a run of {key}")
            _maybe_raise(r, key, behave)
            requeue_in = r.hget(f"behave:{key}", "requeue_in_once")
            requeue_at = None
            if requeue_in is not None and r.hdel(f"behave:{key}", "requeue_in_once"):
                requeue_at = datetime.fromtimestamp(time.time() + float(requeue_in), UTC)
                r.set(f"requested:{key}", requeue_at.timestamp())
            for promised in (k for k in behave.get("promise", "").split(",") if k):
                ctx.will_wake(promised)
            wake = tuple(k for k in behave.get("enqueue", "").split(",") if k)
            return Result(requeue_at=requeue_at, wake=wake)
        finally:
            _record(key, "end")

    reconcile.__name__ = f"reconcile_{kind}"
    return reconcile


RECONCILERS = {kind: _make(kind) for kind in KINDS}


# --- helpers for the tests ---------------------------------------------------------------------------------------


def runs(r: redis.Redis, key: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in r.lrange(f"runs:{key}", 0, -1)]


def starts(r: redis.Redis, key: str) -> list[float]:
    return [x["t"] for x in runs(r, key) if x["e"] == "start"]


def completed(r: redis.Redis, key: str) -> int:
    return sum(1 for x in runs(r, key) if x["e"] == "end")


def idle(r: redis.Redis, queues: tuple[str, ...] = ("claims", "handles", "pools")) -> bool:
    """Nothing can run any more: no queue marks, no queued or unacked messages, no leases."""
    for pattern in (keyspace.pending("*"), keyspace.active("*")):
        if any(True for _ in r.scan_iter(match=pattern)):
            return False
    if any(r.llen(q) or r.llen(f"{q}\x06\x169") for q in queues):
        return False
    return not r.hlen("unacked") and not r.zcard(keyspace.LEASES)


def overlaps(entries: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """Pairs (start, start) of runs that began while another run of the same key was still running."""
    bad, open_since = [], None
    for entry in sorted(entries, key=lambda x: (x["t"], x["e"] == "start")):
        if entry["e"] == "start":
            if open_since is not None:
                bad.append((open_since, entry["t"]))
            open_since = entry["t"]
        else:
            open_since = None
    return bad

"""The watcher's health probes (served by :mod:`workers.health`).

Liveness: the leader-election loop keeps passing (it does every ``lease/10`` seconds, a hanging request at most
``POOLBOY_API_TIMEOUT``), no informer thread nor event delivery thread has died, and neither an informer nor a
delivery thread has been stuck on one delivery for longer than the stall time (deliveries are retried while Redis
is away; once the delivery queue is full, the informers stop reading their streams). Readiness adds: a leader's
Poolboy informers have all listed once (synced); a standby is ready as it is, since standing by is its job.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from watcher.main import Watcher

#: a health check: None when healthy, else why not (the shape ``workers.health`` serves; the watcher does not import
#: the engine, ``stack/watcher.py`` hands these to its server)
Probe = Callable[[], "str | None"]


def election_probe(watcher: Watcher, max_silence: float) -> Probe:
    def probe() -> str | None:
        elector = watcher.elector
        if elector is None:  # --no-leader-election, or not started yet
            return None
        if elector.last_pass is None:
            return None if watcher.leader_election else "not campaigning"
        silent = time.monotonic() - elector.last_pass
        return f"leader election loop silent for {silent:.0f}s" if silent > max_silence else None

    return probe


def _trouble(name: str, alive: bool, busy_since: float | None, what: str, now: float, max_busy: float) -> str | None:
    """Why one of the watcher's threads is unhealthy (dead, or on one delivery for longer than ``max_busy``)."""
    if not alive:
        return f"{name} died"
    if busy_since is not None and now - busy_since > max_busy:
        return f"{name} stuck delivering {what} for {now - busy_since:.0f}s"
    return None


def informers_probe(watcher: Watcher, max_busy: float) -> Probe:
    def probe() -> str | None:
        now = time.monotonic()
        troubles = [_trouble(f"informer {informer.name}", informer.alive, informer.busy_since, "an event", now,
                             max_busy) for informer in watcher.informers() if not informer.stopped]
        troubles += [_trouble(f"{queue.name} thread", queue.alive, queue.busy_since, f"{queue.pending()} events", now,
                              max_busy) for queue in watcher.events.queues.values() if queue.running]
        return next((trouble for trouble in troubles if trouble), None)

    return probe


def synced_probe(watcher: Watcher) -> Probe:
    def probe() -> str | None:
        if not watcher.is_leader:
            return None  # standing by
        pending = [i.name for i in watcher.poolboy_informers() if not i.synced.is_set()]
        if pending or not watcher.poolboy_informers():
            return "informers not synced: " + (", ".join(pending) or "none started")
        return None

    return probe


def probes(watcher: Watcher, stall_seconds: float) -> tuple[dict[str, Probe], dict[str, Probe]]:
    """(live, ready-only) probes of one watcher."""
    live = {"election": election_probe(watcher, stall_seconds), "informers": informers_probe(watcher, stall_seconds)}
    return live, {"synced": synced_probe(watcher)}

"""Per-pool demand metrics derived from handle events.

Like :mod:`watcher.observed`, these come from what the active watcher sees, not from the reconcilers: every handle
change passes through it exactly once.

* ``poolboy_pool_binds_total{pool, handle}``: a pool handle became bound to a claim; ``handle="ready"`` is a warm
  hit (the claim got a ready environment at once), ``"unready"`` a pool handle still provisioning.
* ``poolboy_claim_handles_created_total{provider}``: a cold creation, a handle made for one claim (it appears
  already bound and belongs to no pool), by the provider of its first resource. Demand on a provider is the sum
  of its pools' binds and its cold creations.
* ``poolboy_pool_handle_ready_seconds{pool}``: a pool handle's time to ready, from its ADDED event (the watcher's
  clock) to the first event showing it ready. Handles the watcher did not see created are not measured.

The outdated-handle gauge is :class:`watcher.observed.PoolStats`' (it knows every pool handle's state).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from prometheus_client import Counter, Histogram

from engine.registries import WATCHER
from poolboy.domain.binding.scopes import first_provider

POOL_BINDS = Counter("poolboy_pool_binds_total", "Pool handles bound to a claim, by whether they were ready (warm hit)",
                     ["pool", "handle"], registry=WATCHER)
COLD_CREATIONS = Counter("poolboy_claim_handles_created_total", "Handles created for one claim (no pool handle: a "
                         "cold creation), by provider", ["provider"], registry=WATCHER)
HANDLE_READY = Histogram("poolboy_pool_handle_ready_seconds", "Time from a pool handle's creation to ready", ["pool"],
                         buckets=(1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200), registry=WATCHER)

#: handles whose readiness was not seen yet; beyond this many the oldest are forgotten (bounded memory)
MAX_TRACKED = 100_000


class PoolFlow:
    """Feed with every handle event (:meth:`on_event`)."""

    def __init__(self) -> None:
        self._unbound_ready: dict[str, bool] = {}  # uid of a pool handle last seen unbound -> ready then
        self._created: OrderedDict[str, float] = OrderedDict()  # uid -> monotonic time of its ADDED event
        self._lock = threading.Lock()

    def on_event(self, event_type: str, handle: dict) -> None:
        metadata, spec = handle.get("metadata") or {}, handle.get("spec") or {}
        uid = metadata.get("uid")
        if not uid:
            return
        pool = (spec.get("resourcePool") or {}).get("name")
        bound = bool(spec.get("resourceClaim"))
        ready = (handle.get("status") or {}).get("ready") is True
        with self._lock:
            if event_type == "DELETED":
                self._unbound_ready.pop(uid, None)
                self._created.pop(uid, None)
                return
            if event_type == "ADDED" and bound and not pool:
                COLD_CREATIONS.labels(provider=first_provider(handle)).inc()
            if not pool:
                return
            self._time_to_ready(event_type, uid, pool, ready)
            if bound:
                was_ready = self._unbound_ready.pop(uid, None)
                if was_ready is not None:
                    POOL_BINDS.labels(pool=pool, handle="ready" if was_ready else "unready").inc()
            elif not metadata.get("deletionTimestamp"):
                self._unbound_ready[uid] = ready

    def _time_to_ready(self, event_type: str, uid: str, pool: str, ready: bool) -> None:
        now = time.monotonic()
        if event_type == "ADDED" and not ready:
            self._created[uid] = now
            while len(self._created) > MAX_TRACKED:
                self._created.popitem(last=False)
        elif ready and uid in self._created:
            HANDLE_READY.labels(pool=pool).observe(now - self._created.pop(uid))

    def clear(self) -> None:
        with self._lock:
            self._unbound_ready.clear()
            self._created.clear()

"""Metrics derived from the objects the watcher sees: claim latencies and per-pool handle counts.

Derived here, from watch events, rather than in the reconcilers: the domain stays free of metrics, and the active
watcher sees every change of every claim and handle exactly once (the standby sees nothing and exports nothing).

* :class:`ClaimTimings` — ``poolboy_claim_bind_seconds`` and ``poolboy_claim_ready_seconds``: from the ADDED event
  of a claim (the watcher's clock, sub-second) to the first event showing its ``Bound`` / ``Ready`` condition True.
  Claims the watcher did not see created (a re-list after a restart or a fail-over) are not measured, rather than
  measured from a guess.
* :class:`PoolStats` — gauges per pool computed at scrape time from the last version of every handle seen
  (available = unbound as :func:`poolboy.domain.binding.candidates.is_unbound` says: no claim, not deleting, not
  ignored; of which ready / unready / outdated — built from another revision than the one the pool's
  ``status.revision`` names; bound), and claims waiting for a handle per provider (label
  ``D/resource-claim-waiting``: claims do not name a pool, so they are counted by provider); and, for a pool that
  autoscales, what its last run decided (``status.autoscaling``): the size it aims at, the claim rate it measured
  and, once it has learned a ``period``, the rate it expects, so a dashboard shows why a pool grows before the
  claims come; each pool's ``spec.minAvailable``, so an alert tells a pool that cannot refill from one meant to be
  empty; and per provider the handles whose ``Synced`` condition is False (their resources could not be made or
  updated), so an alert names a failing provider.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from engine.gauge_spec import GaugeSpec
from engine.registries import WATCHER
from poolboy import keys
from poolboy.domain import conditions
from poolboy.domain.binding.candidates import is_unbound
from poolboy.domain.binding.scopes import first_provider

LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
CLAIM_BIND = Histogram("poolboy_claim_bind_seconds", "Time from a claim's creation to its Bound condition",
                       buckets=LATENCY_BUCKETS, registry=WATCHER)
CLAIM_READY = Histogram("poolboy_claim_ready_seconds", "Time from a claim's creation to its Ready condition",
                        buckets=LATENCY_BUCKETS, registry=WATCHER)

#: claims whose Ready was not seen yet; beyond this many the oldest are forgotten (bounded memory)
MAX_TRACKED_CLAIMS = 100_000


class ClaimTimings:
    """Feed with every claim event (:meth:`on_event`); observes each claim's bind and ready latency once."""

    def __init__(self) -> None:
        self._created: OrderedDict[str, float] = OrderedDict()  # uid -> monotonic time of its ADDED event
        self._bound: set[str] = set()
        self._lock = threading.Lock()

    def on_event(self, event_type: str, claim: dict) -> None:
        uid = (claim.get("metadata") or {}).get("uid")
        if not uid:
            return
        now = time.monotonic()
        with self._lock:
            if event_type == "ADDED":
                self._created[uid] = now
                while len(self._created) > MAX_TRACKED_CLAIMS:
                    self._bound.discard(self._created.popitem(last=False)[0])
            if event_type == "DELETED":
                self._forget(uid)
                return
            created = self._created.get(uid)
            if created is None:
                return
            status_conditions = (claim.get("status") or {}).get("conditions")
            if uid not in self._bound and conditions.is_true(status_conditions, "Bound"):
                self._bound.add(uid)
                CLAIM_BIND.observe(now - created)
            if conditions.is_true(status_conditions, "Ready"):
                CLAIM_READY.observe(now - created)
                self._forget(uid)

    def _forget(self, uid: str) -> None:
        self._created.pop(uid, None)
        self._bound.discard(uid)

    def clear(self) -> None:
        with self._lock:
            self._created.clear()
            self._bound.clear()


@dataclass(frozen=True)
class HandleState:
    pool: str | None  # None: a handle made for one claim
    bound: bool
    ready: bool
    available: bool  # unbound as :func:`poolboy.domain.binding.candidates.is_unbound` defines it
    revision: str | None = None
    namespace: str | None = None  # the bound claim's
    provider: str = ""  # its first resource's
    synced: bool = True  # its Synced condition is not False


@dataclass(frozen=True)
class WaitingClaim:
    provider: str
    pool: str | None  # the pool the claim names (annotation ``D/resource-pool-name``)


#: namespaces per pool with gauges of their own (most waiting, then most bound); the rest are summed as ``_other``
#: (not a namespace name: names cannot start with an underscore), so the series grow with pools, not namespaces
MAX_NAMESPACE_SERIES = 10
OTHER_NAMESPACES = "_other"

#: the gauges of :class:`PoolStats`, per pool: its unbound handles by state, and what it should keep
POOL_HANDLE_GAUGES = {
    name: GaugeSpec(f"poolboy_pool_handles_{name}", text, ("pool",))
    for name, text in (("available", "Unbound handles of the pool (not being deleted)"),
                       ("ready", "Available handles that are ready"),
                       ("unready", "Available handles that are not ready yet"),
                       ("bound", "Handles of the pool bound to a claim"),
                       ("outdated", "Available handles built from an older pool or provider spec"))
}
POOL_MIN_AVAILABLE = GaugeSpec("poolboy_pool_min_available",
                               "The pool's spec.minAvailable: the unbound handles it keeps (its floor when it "
                               "autoscales)", ("pool",))
CLAIMS_WAITING = GaugeSpec("poolboy_claims_waiting", "Claims waiting for a matching unbound handle", ("provider",))
PROVIDER_UNSYNCED = GaugeSpec("poolboy_provider_handles_unsynced",
                              "Handles whose first resource comes from the provider and whose Synced condition is "
                              "False (a resource could not be made or updated)", ("provider",))
NAMESPACE_GAUGES = {
    name: GaugeSpec(f"poolboy_pool_namespace_{name}", text, ("pool", "namespace"))
    for name, text in (("waiting", "Claims of the namespace that name the pool and wait for a handle"),
                       ("bound", "Handles of the pool bound to claims of the namespace"))
}


class PoolStats(Collector):
    """The last state of every pool handle and of every waiting claim, exported as gauges on scrape."""

    def __init__(self, waiting_label: str, revision_annotation: str = "") -> None:
        self.waiting_label = waiting_label
        self.domain = waiting_label.partition("/")[0]  # the label is ``D/resource-claim-waiting``
        self.revision_annotation = revision_annotation
        self._handles: dict[tuple[str, str], HandleState] = {}
        self._revisions: dict[tuple[str, str], str] = {}  # pool -> the revision its status names
        self._min_available: dict[tuple[str, str], int] = {}  # pool -> its spec.minAvailable
        self._autoscaling: dict[tuple[str, str], dict[str, float]] = {}  # pool -> its last decision's figures
        self._waiting: dict[tuple[str, str], WaitingClaim] = {}  # claim (namespace, name) -> what it waits for
        self._lock = threading.Lock()

    def on_event(self, event_type: str, obj: dict) -> None:
        metadata = obj.get("metadata") or {}
        ident = (metadata.get("namespace") or "", metadata.get("name") or "")
        kind = keys.TOKENS.get(obj.get("kind", ""))
        with self._lock:
            if kind == keys.HANDLE:
                state = None if event_type == "DELETED" else _handle_state(obj, self.domain, self.revision_annotation)
                _put(self._handles, ident, state)
            elif kind == keys.POOL:
                status = {} if event_type == "DELETED" else obj.get("status") or {}
                minimum = None if event_type == "DELETED" else (obj.get("spec") or {}).get("minAvailable", 0)
                _put(self._revisions, ident, status.get("revision"))
                _put(self._min_available, ident, minimum if isinstance(minimum, int) else None)
                _put(self._autoscaling, ident, _decision(status.get("autoscaling") or {}) or None)
            elif kind == keys.CLAIM:
                waiting = event_type != "DELETED" and self.waiting_label in (metadata.get("labels") or {})
                provider = ((obj.get("spec") or {}).get("provider") or {}).get("name") or ""
                pool = (metadata.get("annotations") or {}).get(f"{self.domain}/resource-pool-name")
                _put(self._waiting, ident, WaitingClaim(provider, pool) if waiting else None)

    def clear(self) -> None:
        with self._lock:
            self._handles.clear()
            self._waiting.clear()
            self._revisions.clear()
            self._min_available.clear()
            self._autoscaling.clear()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            handles = list(self._handles.values())
            waiters = list(self._waiting.items())
            waiting = Counter(claim.provider for _, claim in waiters)
            revisions = {name: revision for (_, name), revision in self._revisions.items()}
            minimums = {name: minimum for (_, name), minimum in self._min_available.items()}
            autoscaling = {name: figures for (_, name), figures in self._autoscaling.items()}
        families = {name: spec.family() for name, spec in POOL_HANDLE_GAUGES.items()}
        counts: Counter[tuple[str, str]] = Counter()
        pools = set()
        for handle in handles:
            if handle.pool is None:
                continue
            pools.add(handle.pool)
            if handle.bound:
                counts[(handle.pool, "bound")] += 1
            elif handle.available:
                counts[(handle.pool, "available")] += 1
                counts[(handle.pool, "ready" if handle.ready else "unready")] += 1
                if handle.pool in revisions and handle.revision != revisions[handle.pool]:
                    counts[(handle.pool, "outdated")] += 1
        for pool in sorted(pools):
            for name, family in families.items():
                family.add_metric([pool], counts[(pool, name)])
        yield from families.values()
        minimum_family = POOL_MIN_AVAILABLE.family()
        for pool, minimum in sorted(minimums.items()):
            minimum_family.add_metric([pool], minimum)
        yield minimum_family
        claims = CLAIMS_WAITING.family()
        for provider, count in sorted(waiting.items()):
            claims.add_metric([provider], count)
        yield claims
        yield _unsynced_family(handles)
        yield from _namespace_families(handles, waiters)
        yield from _autoscaling_families(autoscaling)


#: gauges of an autoscaling pool's last decision: (gauge, field of ``status.autoscaling``)
AUTOSCALING_GAUGES = (
    (GaugeSpec("poolboy_pool_autoscaling_target", "Handles an autoscaling pool aims at (its minAvailable now)",
               ("pool",)), "target"),
    (GaugeSpec("poolboy_pool_autoscaling_claims_per_hour",
               "Claims per hour an autoscaling pool measured over its window (binds plus claims it missed)",
               ("pool",)), "claimsPerHour"),
    (GaugeSpec("poolboy_pool_autoscaling_expected_per_hour",
               "Claims per hour a pool with an autoscaling period expects over its next time to ready, from what "
               "it learned", ("pool",)), "expectedPerHour"),
)


def _decision(record: dict) -> dict[str, float]:
    """The figures of ``status.autoscaling`` the gauges export, those it has (not its profile nor its bind counts:
    the watcher keeps no more of a pool than it exports)."""
    values = ((field, record.get(field)) for _, field in AUTOSCALING_GAUGES)
    return {field: float(value) for field, value in values
            if isinstance(value, int | float) and not isinstance(value, bool)}


def _autoscaling_families(records: dict[str, dict[str, float]]) -> Iterator[GaugeMetricFamily]:
    """One gauge per decision figure, a sample per pool that has it (a pool without ``period`` has no forecast, one
    that stopped autoscaling no record)."""
    for gauge, field in AUTOSCALING_GAUGES:
        family = gauge.family()
        for pool, record in sorted(records.items()):
            if field in record:
                family.add_metric([pool], record[field])
        yield family


def _namespace_families(handles: list[HandleState],
                        waiters: list[tuple[tuple[str, str], WaitingClaim]]) -> Iterator[GaugeMetricFamily]:
    """Per pool and namespace, the claims that name the pool and wait, and the pool's handles bound to the
    namespace's claims: the namespaces that wait or hold, at most :data:`MAX_NAMESPACE_SERIES` per pool."""
    counts: dict[str, dict[str, Counter[str]]] = {}
    for handle in handles:
        if handle.pool is not None and handle.bound and handle.namespace:
            counts.setdefault(handle.pool, {}).setdefault(handle.namespace, Counter())["bound"] += 1
    for (namespace, _), claim in waiters:
        if claim.pool:
            counts.setdefault(claim.pool, {}).setdefault(namespace, Counter())["waiting"] += 1
    families = {name: spec.family() for name, spec in NAMESPACE_GAUGES.items()}
    for pool, by_namespace in sorted(counts.items()):
        ranked = sorted(by_namespace, key=lambda ns: (-by_namespace[ns]["waiting"], -by_namespace[ns]["bound"], ns))
        other: Counter[str] = Counter()
        for namespace in ranked[MAX_NAMESPACE_SERIES:]:
            other.update(by_namespace[namespace])
        rows = [(ns, by_namespace[ns]) for ns in ranked[:MAX_NAMESPACE_SERIES]]
        if other:
            rows.append((OTHER_NAMESPACES, other))
        for namespace, figures in rows:
            for name, family in families.items():
                family.add_metric([pool, namespace], figures[name])
    yield from families.values()


def _unsynced_family(handles: list[HandleState]) -> GaugeMetricFamily:
    """Per provider of any handle seen, its handles not in sync (0 for a provider whose handles all are)."""
    unsynced: Counter[str] = Counter({handle.provider: 0 for handle in handles if handle.provider})
    unsynced.update(handle.provider for handle in handles if handle.provider and not handle.synced)
    family = PROVIDER_UNSYNCED.family()
    for provider, count in sorted(unsynced.items()):
        family.add_metric([provider], count)
    return family


def _handle_state(handle: dict, domain: str, revision_annotation: str) -> HandleState:
    spec, metadata, status = handle.get("spec") or {}, handle.get("metadata") or {}, handle.get("status") or {}
    synced = conditions.get_condition(status.get("conditions"), "Synced") or {}
    return HandleState(pool=(spec.get("resourcePool") or {}).get("name") or None,
                       bound=bool(spec.get("resourceClaim")),
                       ready=status.get("ready") is True,
                       available=is_unbound(handle, domain),
                       revision=(metadata.get("annotations") or {}).get(revision_annotation),
                       namespace=(spec.get("resourceClaim") or {}).get("namespace"),
                       provider=first_provider(handle),
                       synced=synced.get("status") != "False")


def _put(table: dict, ident: tuple[str, str], value: object) -> None:
    if value is None:
        table.pop(ident, None)
    else:
        table[ident] = value

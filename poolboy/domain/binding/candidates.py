"""Warm binding without reading every unbound handle: summaries, classes and scopes (docs/behaviour.md#binding), pure.

The shared cache keeps, per *scope*, a small summary of every unbound handle (``unbound|pool=<p>`` for pool
handles and ``unbound|provider=<name>`` by the provider of their first resource). A claim ranks handles from these
summaries: handles whose resources (provider names, names, templates) are identical form a *class*, and ranking
criteria 1–3 and the template exclusions depend only on the class, so they are evaluated once per class on one
representative read from the cache; criteria 4–8 and the per-handle exclusions (unhealthy, expiring within 120 s)
come from the summaries. The order is exactly :func:`poolboy.domain.matching.rank_candidates`'s, at the cost of one
template comparison per class instead of one per handle, and no API request.

Claims that must wait for a handle (``disableCreation``) are kept, per scope, in creation order
(``waiting|<scope>``); the reservation serves them oldest first (see :mod:`cache.handle_index`).
"""

from __future__ import annotations

import functools
import hashlib
import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import orjson

from poolboy.domain import matching, pool_revision, reuse
from poolboy.domain.binding.queue_order import Waiter
from poolboy.domain.binding.queue_policy import PRIORITY_LABEL
from poolboy.domain.binding.scopes import (
    claim_first_provider,
    claim_scope,
    first_provider,
    handle_scopes,
    provider_scope,
)
from poolboy.domain.handle_state import RESUMED_AT
from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE
from poolboy.kube.interfaces import IndexMatch
from poolboy.utils import timeutil

UNBOUND = "unbound"
WAITING = "waiting"
#: handles made for a claim (not from a pool), by scope and creation time: the demand a pool missed
CREATED = "created"
#: bound handles by scope and claim namespace (``bound|<scope>|<namespace>``): what a namespace holds, for fair share
BOUND = "bound"
#: the priority class a waiting claim's label asks for, by scope (``priority|<scope>``)
PRIORITY = "priority"
#: the label (after the domain's prefix) of a claim that waits for a handle: its queue's index is kept from it
WAITING_LABEL = "resource-claim-waiting"
#: the labels the domain selects on by their presence alone (the waiting claims, :mod:`poolboy.domain.binding`):
#: the shared cache keeps a presence index only for these (:func:`cache.model.indexes`), one command fewer per
#: other label on every change
PRESENCE_LABELS = frozenset({WAITING_LABEL})


@dataclass(frozen=True)
class Reservation:
    """A reserved handle name; or none, with ``wait`` when older waiting claims of the scope come first. ``handle``
    is the reserved handle as the index's store last saw it, when it could say: the engine hands it to the run's
    reader, so the claim's read of it costs no round trip (like any cached read it may be stale, which the
    conditional bind patch detects)."""

    name: str | None = None
    wait: bool = False
    handle: dict[str, Any] | None = None
    #: waiting because the claim's namespace holds its cap (counting the handles its claims just reserved)
    capped: bool = False
    #: the names after ``name`` that the reservation took from the ranking but did not try (:meth:`HandleIndex.reserve`)
    untried: tuple[str, ...] = ()


class Snapshot(Mapping[str, dict]):
    """Summaries by handle name as an index read them, and when (``time.monotonic()``): a caller that asked for a
    recent answer can tell one read before it asked, which may miss handles added since.

    Never changed once taken, so rankers in other threads may hold it while it is replaced. Each class's handles in
    rank order (:meth:`by_class`) are sorted once per snapshot, not once per claim: a burst of N claims on a pool of
    N ranked N summaries per claim. :meth:`without` leaves handles out of a new snapshot that shares that work,
    so taking a handle costs no new sort either."""

    def __init__(self, entries: Mapping[str, dict], read_at: float, *, _gone: frozenset[str] = frozenset(),
                 _classes: dict[str, _Class] | None = None) -> None:
        self._entries = entries
        self._gone = _gone
        self._classes = _classes
        self.read_at = read_at

    def __getitem__(self, name: str) -> dict:
        if name in self._gone:
            raise KeyError(name)
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name not in self._gone and name in self._entries

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._entries if name not in self._gone)

    def __len__(self) -> int:
        return len(self._entries) - len(self._gone)

    def without(self, names: Iterable[str]) -> Snapshot:
        """This snapshot less ``names`` (those it holds), sharing its entries and, once sorted, its per-class order
        (a snapshot no claim has ranked yet is not sorted for this)."""
        gone = self._gone | {name for name in names if name in self._entries}
        return Snapshot(self._entries, self.read_at, _gone=gone, _classes=self._classes)

    def by_class(self) -> dict[str, _Class]:
        """Each class's handles: by name (to pick a representative), and in rank order on criteria 4–8 with their
        lifespan ends (docs/behaviour.md#binding); unhealthy handles left out. Handles this snapshot has left out
        are still listed: callers skip them (``name in snapshot``)."""
        if self._classes is None:  # two threads may both sort a new snapshot: the same result, no lock needed
            classes: dict[str, _Class] = {}
            for name, item in self._entries.items():
                entry = classes.setdefault(str(item.get("c")), _Class([], []))
                entry.names.append(name)
                if item.get("h") is not False:
                    entry.ranked.append(((item.get("h") is not True, item.get("r") is not True,
                                          matching.state_rank(item.get("st")), -(item.get("s") or 0),
                                          str(item.get("t") or "") or "~", name), str(item.get("e") or "")))
            for entry in classes.values():
                entry.names.sort()
                entry.ranked.sort()
            self._classes = classes
        return self._classes


@dataclass(frozen=True)
class QueueState:
    """A scope's queue as a policy orders it (:mod:`.queue_order`): the waiting claims, the handles each of their
    namespaces holds in the scope, and how many unbound handles the scope has."""

    waiters: list[Waiter]
    bound: dict[str, int]
    free: int


@dataclass(frozen=True)
class _Class:
    names: list[str]  # sorted
    ranked: list[tuple[tuple, str]]  # (rank key ending in the name, lifespan end), best first


class HandleIndex(Protocol):
    """The engine's index of unbound handles (``cache.handle_index``); absent, binding lists from the API."""

    def summaries(self, scope: str, *fallbacks: str, max_age: float = 0.0) -> Snapshot | None:
        """Unbound handles of ``scope`` by name (see :func:`summary`), with those of the ``fallbacks`` scopes that
        ``scope`` lacks, or None when the index cannot answer; read no more than ``max_age`` seconds ago (0: now).
        A snapshot may still list a handle bound since: only a reservation tells."""
        ...

    def reserve(self, scope: str, names: Iterable[str], claim: dict, position: int | None = None,
                cap: int | None = None) -> Reservation:
        """Atomically reserve the first of ``names`` (best first) no other claim holds; ``names`` may be lazy, and
        those it gave but the reservation did not try come back in :attr:`Reservation.untried`. ``position`` is the
        claim's place under its queue policy (1: next), when the policy is not the index's own oldest-first order:
        the claim waits unless fewer claims come before it than the scope has unbound handles. ``cap`` is the most
        handles the claim's namespace may hold in the scope: over it the reservation answers ``capped``."""
        ...

    def release(self, name: str, claim: dict, scope: str = "") -> None:
        ...

    def created_since(self, scope: str, since: Sequence[float]) -> list[int] | None:
        """For each epoch time in ``since``, how many handles were created for claims of ``scope`` (see
        :func:`created_entry`) since then and still exist; None when the index cannot answer."""
        ...

    def queue_position(self, scope: str, claim: dict) -> tuple[int, int] | None:
        """``(position, waiting)``: the claim's place (1 = next) among the claims waiting in ``scope`` and how many
        wait, or None when the index cannot answer. A claim not yet in the queue counts after every older one."""
        ...

    def waiting_heads(self, scopes: Sequence[str]) -> list[tuple[str, str]] | None:
        """``(namespace, name)`` of the claims waiting in each of ``scopes`` that may take a handle now: the oldest,
        as many as the scope has unbound handles (a claim further back gets ``wait`` from :meth:`reserve`); None
        when the index cannot answer."""
        ...

    def queue_state(self, scope: str) -> QueueState | None:
        """The scope's waiting claims with what a queue policy orders them by; None when the index cannot answer."""
        ...


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def is_unbound(handle: Mapping[str, Any], domain: str) -> bool:
    """Bindable as far as the handle alone tells: no claim (neither ``spec.resourceClaim`` nor the claim label),
    not being deleted, not ignored (Poolboy writes nothing to an ignored object, and a bind is a write), and not
    being cleaned for reuse (:mod:`poolboy.domain.reuse`: its pool counts it as coming).

    The one definition of an unbound handle: binding, the pool's available handles, the index and the watcher's
    pool gauges all use it."""
    labels = _labels(handle)
    return not ((handle.get("spec") or {}).get("resourceClaim") or (handle.get("metadata") or {}).get(
        "deletionTimestamp") or f"{domain}/resource-claim-name" in labels or f"{domain}/ignore" in labels
        or f"{domain}/{reuse.CLEANING_LABEL}" in labels)


def unbound_scopes(handle: Mapping[str, Any], domain: str) -> list[str]:
    """The scopes an unbound handle serves, none when it is not unbound: the values the unbound index files it under
    (the shared cache's ``unbound|<scope>``, :func:`index_entries`)."""
    return handle_scopes(handle, domain) if is_unbound(handle, domain) else []


def unbound_in(domain: str, *scopes: str) -> IndexMatch:
    """The unbound handles serving any of ``scopes``, as a reader's ``list`` takes it (``index=``): the shared cache
    answers from its index, the API client by listing and applying :func:`unbound_scopes`."""
    return IndexMatch(UNBOUND, scopes, functools.partial(unbound_scopes, domain=domain))


def handle_class(handle: Mapping[str, Any]) -> str:
    """Identical for handles that rank and match alike on criteria 1–3 (same providers, names and templates)."""
    spec = handle.get("spec") or {}
    shape = [[(r.get("provider") or {}).get("name"), r.get("name"), r.get("template")]
             for r in spec.get("resources") or []]
    key = orjson.dumps([shape, (spec.get("provider") or {}).get("name")], option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def summary(handle: Mapping[str, Any], domain: str) -> dict[str, Any]:
    """What criteria 4–8 and the per-handle exclusions need, small enough to keep for every unbound handle; plus
    the pool revision it was built from (``v``) and its time to ready (``rt``), so a pool counts and rolls
    outdated handles and measures how long its handles take from summaries too; and its standby (``st``, ``sb``)."""
    spec, status, metadata = handle.get("spec") or {}, handle.get("status") or {}, handle.get("metadata") or {}
    score = spec.get("preferenceScore")
    return {"c": handle_class(handle), "h": status.get("healthy"), "r": status.get("ready"),
            "s": score if isinstance(score, int | float) and not isinstance(score, bool) else 0,
            "t": metadata.get("creationTimestamp") or "", "e": (spec.get("lifespan") or {}).get("end") or "",
            "v": pool_revision.of_handle(handle, domain), "rt": time_to_ready(handle), **_standby_entry(handle)}


def _standby_entry(handle: Mapping[str, Any]) -> dict[str, Any]:
    """A handle of a pool with standby: its state (``st``, ranked) and the pool's wish (``sb``, the pool decides
    from it); nothing for any other handle, whose entry stays as it was."""
    state, wants = (handle.get("status") or {}).get("state"), (handle.get("spec") or {}).get("standby")
    return {key: value for key, value in (("st", state), ("sb", wants)) if value is not None}


def time_to_ready(handle: Mapping[str, Any]) -> float | None:
    """Seconds from a handle's creation to its ``Ready`` condition turning True, None while it is not ready and for
    a handle that resumed from standby (its Ready turned True when it resumed: no measure of provisioning)."""
    metadata, status = handle.get("metadata") or {}, handle.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if not ready or ready.get("status") != "True" or status.get("ready") is not True or status.get(RESUMED_AT):
        return None
    try:
        return (timeutil.parse_timestamp(ready.get("lastTransitionTime") or "")
                - timeutil.parse_timestamp(metadata.get("creationTimestamp") or "")).total_seconds()
    except ValueError:
        return None


def index_entries(handle: Mapping[str, Any], domain: str) -> list[tuple[str, str]]:
    """``(index, value)`` of an unbound handle in every scope it serves (none when it is not bindable)."""
    scopes = unbound_scopes(handle, domain)
    if not scopes:
        return []
    value = orjson.dumps(summary(handle, domain)).decode()
    return [(f"{UNBOUND}|{scope}", value) for scope in scopes]


def waiting_entry(claim: Mapping[str, Any], domain: str) -> tuple[str, float] | None:
    """``(index, score)`` of a claim labelled as waiting for a handle: its creation time orders the queue."""
    if f"{domain}/{WAITING_LABEL}" not in _labels(claim):
        return None
    metadata = claim.get("metadata") or {}
    pool = (metadata.get("annotations") or {}).get(f"{domain}/resource-pool-name")
    return f"{WAITING}|{claim_scope(pool, claim_first_provider(claim))}", queue_score(claim)


def bound_entries(handle: Mapping[str, Any], domain: str) -> list[tuple[str, float]]:
    """``(index, score)`` of a bound, live handle in each scope it serves, filed under its claim's namespace; the
    score (its creation time) never changes, so binding is the entry's only write."""
    labels = _labels(handle)
    namespace = labels.get(f"{domain}/resource-claim-namespace")
    if not namespace or (handle.get("metadata") or {}).get("deletionTimestamp"):
        return []
    return [(f"{BOUND}|{scope}|{namespace}", queue_score(handle)) for scope in handle_scopes(handle, domain)]


def priority_entry(claim: Mapping[str, Any], domain: str, index: str) -> tuple[str, str] | None:
    """``(index, value)`` of a waiting claim (in ``index``, its queue) whose ``D/priority`` label asks for a class."""
    asked = _labels(claim).get(f"{domain}/{PRIORITY_LABEL}")
    return (f"{PRIORITY}|{index.split('|', 1)[1]}", asked) if asked else None


def created_entry(handle: Mapping[str, Any], domain: str) -> tuple[str, float] | None:
    """``(index, score)`` of a handle created for a claim rather than taken from a pool (a claim that found no
    pool handle to bind): its creation time in its provider's scope, where the pools of that provider count the
    demand they missed (:mod:`poolboy.reconcilers.pool_autoscaling`)."""
    labels = _labels(handle)
    if f"{domain}/resource-claim-name" not in labels or f"{domain}/resource-pool-name" in labels \
            or ((handle.get("spec") or {}).get("resourcePool") or {}).get("name"):
        return None
    return f"{CREATED}|{provider_scope(first_provider(handle))}", queue_score(handle)


def queue_score(claim: Mapping[str, Any]) -> float:
    """A waiting claim's order in its queue (oldest first), a created handle's time: its creation time."""
    try:
        return timeutil.parse_timestamp((claim.get("metadata") or {}).get("creationTimestamp") or "").timestamp()
    except ValueError:
        return 0.0


def cache_entries(obj: Mapping[str, Any], domain: str) -> list[str]:
    """The shared cache's binding indexes of one object (see :func:`cache.model.indexes`): an unbound
    handle's summary in each scope it serves, a claim's own handle's creation time, a bound handle under its claim's
    namespace, a waiting claim's place in its scope's queue and the priority class it asks for."""
    kind = obj.get("kind")
    if kind == RESOURCE_HANDLE:
        created = created_entry(obj, domain)
        return [f"h:{name}\t{value}" for name, value in index_entries(obj, domain)] + \
            ([f"z:{created[0]}\t{created[1]!r}"] if created is not None else []) + \
            [f"z:{name}\t{score!r}" for name, score in bound_entries(obj, domain)]
    if kind == RESOURCE_CLAIM:
        waiting = waiting_entry(obj, domain)
        if waiting is not None:
            priority = priority_entry(obj, domain, waiting[0])
            return [f"z:{waiting[0]}\t{waiting[1]!r}"] + ([f"h:{priority[0]}\t{priority[1]}"] if priority else [])
    return []


def _class_view(handle: Mapping[str, Any]) -> dict[str, Any]:
    """The representative without its per-handle facts, so only class-level exclusions can apply to it."""
    spec = {k: v for k, v in (handle.get("spec") or {}).items() if k not in ("lifespan", "resourceClaim")}
    metadata = {k: v for k, v in (handle.get("metadata") or {}).items() if k not in ("deletionTimestamp", "labels")}
    metadata["labels"] = {k: v for k, v in _labels(handle).items() if not k.endswith(f"/{reuse.CLEANING_LABEL}")}
    return {**handle, "metadata": metadata, "spec": spec, "status": {}}


def rank(claim: dict, summaries: Snapshot, fetch: Callable[[str], dict | None],
         providers: Callable[[list[dict]], dict[str, dict]], now: datetime, *, domain: str,
         claim_resources: list[dict]) -> Iterator[str]:
    """Names of the candidate handles, best first (docs/behaviour.md#binding), from summaries and one representative
    per class; lazily, so that a claim pays for the handles it tries, not for the whole pool.

    ``fetch(name)`` reads a handle (from the cache); ``providers(representatives)`` maps provider names to provider
    objects for ``matchIgnore``.
    """
    classes = summaries.by_class()
    representatives: dict[str, dict] = {}
    for cls, entry in classes.items():
        for name in entry.names:
            handle = fetch(name) if name in summaries else None
            if handle is not None and handle_class(handle) == cls:
                representatives[cls] = _class_view(handle)
                break
    provider_map = providers(list(representatives.values()))
    if representatives:  # as rank_candidates: an invalid matchIgnore of the claim's providers shows at once
        matching.check_match_ignore({name: provider_map[name] for name in
                                     ((r.get("provider") or {}).get("name") for r in claim_resources)
                                     if name in provider_map})
    by_key: dict[tuple, list[list[tuple[tuple, str]]]] = {}
    for cls, view in representatives.items():
        if matching.exclusion_reason(claim, view, provider_map, now, domain=domain,
                                     claim_resources=claim_resources) is None:
            by_key.setdefault(matching.rank_key(claim_resources, view)[:3], []).append(classes[cls].ranked)
    return _in_order(by_key, summaries, now)


def _in_order(by_key: dict[tuple, list[list[tuple[tuple, str]]]], summaries: Snapshot,
              now: datetime) -> Iterator[str]:
    """Criteria 1–3 (the class's key) first, then each class's own order; classes that tie on 1–3 interleave."""
    for key in sorted(by_key):
        lists = by_key[key]
        for item_key, end in (lists[0] if len(lists) == 1 else heapq.merge(*lists)):
            name = item_key[-1]
            if name in summaries and not matching.end_too_soon(end, now):
                yield name

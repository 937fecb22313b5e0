"""The reader a reconcile uses: cache first, the API on a miss; writes go to the API and through to the cache.

Implements :class:`poolboy.kube.interfaces.Client` as :class:`poolboy.kube.KubeClient` does (the domain cannot tell
them apart), like controller-runtime's delegating client: the :class:`~poolboy.kube.interfaces.Reader` methods are
answered from :class:`cache.store.ObjectCache` when it can answer, the :class:`~poolboy.kube.interfaces.Writer`
methods go to the real client (and their results into the cache). Every method is written out, so the interface is
the list below, not whatever the real client happens to have. Besides, the engine may have it read ahead
(:meth:`CachedKubeClient.prefetch`, the run's ``Context.prefetcher``) and hand it objects it read for the run
(:meth:`CachedKubeClient.prime`); neither is the domain's.

One instance per run (:meth:`engine.runtime.Runtime.reader` makes a new one each time), because a run that met a
failed precondition (409, or a JSON-patch ``test`` that failed with 422) read something stale and reads from the
API for the rest of the run: "a stale read costs one conflict and a fresh read". What the run got and wrote is kept
in its :class:`cache.journal.RunJournal`, which the engine reads when the run ends.
"""

from __future__ import annotations

import builtins
import copy
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter

from cache import model as cache_model
from cache.journal import RunJournal
from cache.store import UPDATED, WRITTEN, ObjectCache
from engine.registries import WORKER
from poolboy import kube
from poolboy.observability import labelled

if TYPE_CHECKING:  # the interfaces' types are enough here
    from poolboy.kube.interfaces import Client, IndexMatch, ObjectRef

log = logging.getLogger(__name__)

CACHE_READS = Counter("poolboy_cache_reads_total", "Reads through the shared cache, by verb and outcome",
                      ["verb", "outcome"], registry=WORKER)

_STALE = (kube.Conflict, kube.Invalid)


class CachedKubeClient:
    """A :class:`~poolboy.kube.interfaces.Client` reading through ``cache``, writing to ``client`` (one per run)."""

    def __init__(self, client: Client, cache: ObjectCache | None, *, journal: RunJournal | None = None) -> None:
        """``journal``: the run's (the engine's runs defer their writes to its end); none given, one that records
        what the run got and puts each write into the cache at once."""
        self._client = client
        self._cache = cache
        self.fresh = cache is None  # True: every read goes to the API
        self.journal = journal if journal is not None else RunJournal(defer_writes=False)
        #: identity -> an object read for the run ahead of its get (:meth:`prefetch`, :meth:`prime`): answers the
        #: first get of it
        self._prefetched: dict[str, dict] = {}

    # --- the engine's: reads made ahead of the run's gets ----------------------------------------------------------

    def prefetch(self, refs: Iterable[ObjectRef]) -> None:
        """Read the objects the run is about to get in one round trip (those it wrote or has read ahead excepted);
        each one found answers its next get. Reads from the API (``fresh``) are not made ahead."""
        if self.fresh or self._cache is None:
            return
        wanted: dict[str, tuple[str, str, str | None, str]] = {}
        for api_version, kind, name, namespace in refs:
            ident = cache_model.object_id(api_version, kind, namespace, name)
            if self.journal.written(ident) is None and ident not in self._prefetched:
                wanted[ident] = (api_version, kind, namespace, name)
        if not wanted:
            return
        found = self._cached("prefetch", lambda c: c.get_many(list(wanted.values())))
        for ident, obj in zip(wanted, found or (), strict=False):
            if obj is not None:
                self._prefetched[ident] = obj

    def prime(self, obj: dict) -> None:
        """The engine read ``obj`` from the cache for this run, after the run began (with the run's start, or with a
        reservation): the first get of it needs no read of its own."""
        self._prefetched[cache_model.identity(obj)] = obj

    # --- reads -----------------------------------------------------------------------------------------------------

    def _cached(self, verb: str, read: Any) -> Any:
        if self.fresh or self._cache is None:
            return None
        try:
            found = read(self._cache)
        except Exception as error:  # Redis away: the cache only costs speed
            log.debug("cache %s failed: %s", verb, error)
            labelled(CACHE_READS, verb, "error").inc()
            return None
        labelled(CACHE_READS, verb, "miss" if found is None else "hit").inc()
        return found

    def _get_cached(self, api_version: str, kind: str, name: str, namespace: str | None) -> dict | None:
        ident = cache_model.object_id(api_version, kind, namespace, name)
        written = self.journal.written(ident)
        if written is not None and not self.fresh:
            return copy.deepcopy(written)
        prefetched = self._prefetched.pop(ident, None)
        if prefetched is not None and not self.fresh:
            labelled(CACHE_READS, "get", "hit").inc()
            return prefetched
        return self._cached("get", lambda c: c.get(api_version, kind, namespace, name))

    def get_or_none(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        hit = self._get_cached(api_version, kind, name, namespace)
        return self._saw(hit if hit is not None else self._client.get_or_none(api_version, kind, name, namespace))

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict:
        hit = self._get_cached(api_version, kind, name, namespace)
        found = self._saw(hit if hit is not None else self._client.get(api_version, kind, name, namespace))
        assert found is not None
        return found

    def _saw(self, obj: dict | None) -> dict | None:
        """Record the version of an object this run got in the journal (:meth:`RunJournal.seen`)."""
        if obj is not None:
            self.journal.saw(obj)
        return obj

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, index: IndexMatch | None = None) -> builtins.list[dict]:
        """From the cache's indexes (a label selector's, or ``index`` itself: controller-runtime's
        ``MatchingFields``) when it can answer, from the API otherwise."""
        if field_selector is None:  # the cache answers label selectors only
            hit = self._cached("list", lambda c: c.list(api_version, kind, namespace, label_selector, index=index))
            if hit is not None:
                return self._with_own_writes(hit, api_version, kind, namespace, label_selector, index)
        return self._client.list(api_version, kind, namespace, label_selector=label_selector,
                                 field_selector=field_selector, index=index)

    def _with_own_writes(self, listed: builtins.list[dict], api_version: str, kind: str, namespace: str | None,
                         label_selector: str | None, index: IndexMatch | None) -> builtins.list[dict]:
        """A cached list as the cache will answer it once this run's deferred writes are in: each object this run
        wrote in its latest version, where it still matches the selector and the index."""
        mine = self.journal.written_of(api_version, kind, namespace)
        if not mine:
            return listed
        terms = cache_model.parse_selector(label_selector)
        result = [obj for obj in listed if cache_model.identity(obj) not in mine]
        result += [copy.deepcopy(obj) for obj in mine.values()
                   if cache_model.selector_matches(terms, obj) and (index is None or index.matches(obj))]
        return sorted(result, key=cache_model.identity)

    # --- writes: through to the API, then the result into the cache ------------------------------------------------

    def _write(self, call: Any, *, insert: bool = False) -> Any:
        try:
            result = call()
        except _STALE:
            self.fresh = True  # what this run read was stale: read from the API from now on
            raise
        self._write_through(result, insert=insert)
        return result

    def _write_through(self, obj: Any, *, insert: bool) -> None:
        if self._cache is None or not isinstance(obj, dict):
            return
        if self.journal.defer_writes:
            self.journal.wrote(obj, created=insert)
            return
        try:
            self._cache.put(obj, mode=WRITTEN if insert else UPDATED)
        except Exception as error:
            log.debug("cache write-through failed: %s", error)

    def create(self, body: dict, *, dry_run: bool = False, strict: bool = False) -> dict:
        if dry_run:  # nothing was written: nothing for the cache
            return self._client.create(body, dry_run=True, strict=strict)
        return self._write(lambda: self._client.create(body, strict=strict), insert=True)

    def replace(self, body: dict) -> dict:
        return self._write(lambda: self._client.replace(body))

    def replace_status(self, body: dict) -> dict:
        return self._write(lambda: self._client.replace_status(body))

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict, *,
                    resource_version: str | None = None, status: bool = False) -> dict:
        return self._write(lambda: self._client.patch_merge(api_version, kind, name, namespace, patch,
                                                            resource_version=resource_version, status=status))

    def patch_json(self, api_version: str, kind: str, name: str, namespace: str | None, ops: builtins.list[dict], *,
                   status: bool = False, strict: bool = False, dry_run: bool = False) -> dict:
        if dry_run:  # nothing was written: nothing for the cache
            return self._client.patch_json(api_version, kind, name, namespace, ops, status=status, strict=strict,
                                           dry_run=True)
        return self._write(lambda: self._client.patch_json(api_version, kind, name, namespace, ops, status=status,
                                                           strict=strict))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str | None = None, uid: str | None = None,
               resource_version: str | None = None) -> dict | None:
        return self._write(lambda: self._client.delete(api_version, kind, name, namespace, propagation=propagation,
                                                       uid=uid, resource_version=resource_version))

    def delete_if_exists(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
                         propagation: str | None = None, uid: str | None = None,
                         resource_version: str | None = None) -> bool:
        return self._write(lambda: self._client.delete_if_exists(api_version, kind, name, namespace,
                                                                 propagation=propagation, uid=uid,
                                                                 resource_version=resource_version))

"""The reader a reconcile uses: cache first, the API on a miss; writes go to the API and through to the cache.

Implements :class:`poolboy.kube.interfaces.Client` as :class:`poolboy.kube.KubeClient` does (the domain cannot tell
them apart), like controller-runtime's delegating client: the :class:`~poolboy.kube.interfaces.Reader` methods are
answered from :class:`cache.store.ObjectCache` when it can answer, the :class:`~poolboy.kube.interfaces.Writer`
methods go to the real client (and their results into the cache). Every method is written out, so the interface is
the list below, not whatever the real client happens to have.

One instance per run (:meth:`engine.runtime.Runtime.reader` makes a new one each time), because a run that met a
failed precondition (409, or a JSON-patch ``test`` that failed with 422) read something stale and reads from the
API for the rest of the run: "a stale read costs one conflict and a fresh read".

With ``defer_writes`` (the engine's runs), the results of writes are kept until the run ends and go into the cache
in the same round trip as the run's other Redis work (:meth:`deferred_puts`, sent by :mod:`workers.tasks`): one
round trip per run instead of one per write. Meanwhile the run reads its own writes (a get or list answered from
the cache sees what this run wrote last, as the write-through would have shown it), and other runs see them once
the watch event or the run's end puts them in; a run that reads an older version meanwhile meets the write's
precondition, as with any stale read.
"""

from __future__ import annotations

import builtins
import copy
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter

from cache import model as cache_model
from cache.store import UPDATED, WRITTEN, ObjectCache, ScriptCall
from poolboy import kube
from poolboy.observability import labelled

if TYPE_CHECKING:  # discovery imports the official client; the types are enough here
    from poolboy.kube.discovery import ResourceInfo
    from poolboy.kube.interfaces import Client, IndexMatch, ObjectRef

log = logging.getLogger(__name__)

CACHE_READS = Counter("poolboy_cache_reads_total", "Reads through the shared cache, by verb and outcome",
                      ["verb", "outcome"])

_STALE = (kube.Conflict, kube.Invalid)
#: the most object versions one run reports as got (:meth:`CachedKubeClient.seen`): a bound for the DONE script's
#: arguments; a run past it is only run again by an event it could have ignored
MAX_SEEN = 256


class CachedKubeClient:
    """A :class:`~poolboy.kube.interfaces.Client` reading through ``cache``, writing to ``client`` (one per run)."""

    def __init__(self, client: Client, cache: ObjectCache | None, *, defer_writes: bool = False) -> None:
        self._client = client
        self._cache = cache
        self.fresh = cache is None  # True: every read goes to the API
        self.defer_writes = defer_writes
        #: identity -> (the last result of this run's writes of the object, whether one of them created it)
        self._written: dict[str, tuple[dict, bool]] = {}
        #: identity -> an object read for the run before it began (the engine reads the run's own object in the
        #: round trip that starts the run): answers the first get of it
        self._prefetched: dict[str, dict] = {}
        #: "<uid>/<resourceVersion>" of what the run got by name, in order (see :meth:`seen`)
        self._seen: dict[str, None] = {}

    # --- reads ---------------------------------------------------------------------------------------------------

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

    def prefetch(self, refs: Iterable[ObjectRef]) -> None:
        """Read the objects the run is about to get in one round trip (those it wrote or has read ahead excepted);
        each one found answers its next get. Reads from the API (``fresh``) are not made ahead."""
        if self.fresh or self._cache is None:
            return
        wanted: dict[str, tuple[str, str, str | None, str]] = {}
        for api_version, kind, name, namespace in refs:
            ident = cache_model.object_id(api_version, kind, namespace, name)
            if ident not in self._written and ident not in self._prefetched:
                wanted[ident] = (api_version, kind, namespace, name)
        if not wanted:
            return
        found = self._cached("prefetch", lambda c: c.get_many(list(wanted.values())))
        for ident, obj in zip(wanted, found or (), strict=False):
            if obj is not None:
                self._prefetched[ident] = obj

    def prefetched(self, obj: dict) -> None:
        """``obj`` was read from the cache for this run (after the run began): its first get needs no read."""
        self._prefetched[cache_model.identity(obj)] = obj

    def _get_cached(self, api_version: str, kind: str, name: str, namespace: str | None) -> dict | None:
        ident = cache_model.object_id(api_version, kind, namespace, name)
        written = self._written.get(ident)
        if written is not None and not self.fresh:
            return copy.deepcopy(written[0])
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
        """Remember the version of an object this run got (see :meth:`seen`)."""
        if obj is not None:
            metadata = obj.get("metadata") or {}
            uid, version = metadata.get("uid"), metadata.get("resourceVersion")
            if uid and version:
                self._seen[f"{uid}/{version}"] = None
        return obj

    def seen(self) -> builtins.list[str]:
        """``"<uid>/<resourceVersion>"`` of every object version this run got by name: a watch event of one of them
        brings the run nothing it has not acted on (:mod:`engine.own_writes`). Lists are left out: a pool run lists
        every handle of its pool, and their events are few."""
        return builtins.list(self._seen)[:MAX_SEEN]

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
        mine = {ident: obj for ident, (obj, _) in self._written.items()
                if obj.get("apiVersion") == api_version and obj.get("kind") == kind
                and cache_model.in_namespace(obj, namespace)}
        if not mine:
            return listed
        terms = cache_model.parse_selector(label_selector)
        result = [obj for obj in listed if cache_model.identity(obj) not in mine]
        result += [copy.deepcopy(obj) for obj in mine.values()
                   if cache_model.selector_matches(terms, obj) and (index is None or index.matches(obj))]
        return sorted(result, key=cache_model.identity)

    # --- writes: through to the API, then the result into the cache ----------------------------------------------

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
        if self.defer_writes:
            if (obj.get("metadata") or {}).get("name") and obj.get("kind"):
                ident = cache_model.identity(obj)
                created = insert or (ident in self._written and self._written[ident][1])
                self._written[ident] = (obj, created)
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

    def deferred_puts(self) -> builtins.list[ScriptCall]:
        """The cache writes of this run's deferred writes (the latest result per object), for the run's last
        round trip; forgotten here once taken."""
        if self._cache is None:
            return []
        calls = []
        for obj, insert in self._written.values():
            try:
                call = self._cache.put_call(obj, mode=WRITTEN if insert else UPDATED)
            except Exception as error:  # e.g. nested deeper than the encoder goes: the cache only costs speed
                log.debug("cache write-through failed: %s", error)
                continue
            if call is not None:
                calls.append(call)
        self._written.clear()
        return calls

    # --- the rest of the Writer: the real client's --------------------------------------------------------------

    def emit_event(self, obj: dict, reason: str, message: str, *, type: str = "Normal", action: str | None = None,
                   component: str = "poolboy") -> None:
        self._client.emit_event(obj, reason, message, type=type, action=action, component=component)

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        return self._client.resource_info(api_version, kind)

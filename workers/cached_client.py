"""The reader a reconcile uses: cache first, the API on a miss; writes go to the API and through to the cache.

Same interface as :class:`poolboy.kube.KubeClient` (the domain cannot tell them apart), like controller-runtime's
delegating client: ``get``/``get_or_none``/``list`` are answered from :class:`workers.cache.ObjectCache` when it can
answer, every other call is the real client's. One instance per run (:meth:`for_run`), because a run that met a
failed precondition (409, or a JSON-patch ``test`` that failed with 422) read something stale and reads from the
API for the rest of the run: "a stale read costs one conflict and a fresh read".
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import Counter

from poolboy import kube
from workers.cache import ObjectCache

log = logging.getLogger(__name__)

CACHE_READS = Counter("poolboy_cache_reads_total", "Reads through the shared cache, by verb and outcome",
                      ["verb", "outcome"])

_STALE = (kube.Conflict, kube.Invalid)


class CachedKubeClient:
    def __init__(self, client: kube.KubeClient, cache: ObjectCache | None) -> None:
        self._client = client
        self._cache = cache
        self.fresh = cache is None  # True: every read goes to the API

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    # --- reads ---------------------------------------------------------------------------------------------------

    def _cached(self, verb: str, read: Any) -> Any:
        if self.fresh or self._cache is None:
            return None
        try:
            found = read(self._cache)
        except Exception as error:  # Redis away: the cache only costs speed
            log.debug("cache %s failed: %s", verb, error)
            CACHE_READS.labels(verb, "error").inc()
            return None
        CACHE_READS.labels(verb, "miss" if found is None else "hit").inc()
        return found

    def get_or_none(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        hit = self._cached("get", lambda c: c.get(api_version, kind, namespace, name))
        if hit is not None:
            return hit
        return self._client.get_or_none(api_version, kind, name, namespace)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict:
        hit = self._cached("get", lambda c: c.get(api_version, kind, namespace, name))
        if hit is not None:
            return hit
        return self._client.get(api_version, kind, name, namespace)

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str | None = None,
             **kwargs: Any) -> list[dict]:
        if not kwargs:
            hit = self._cached("list", lambda c: c.list(api_version, kind, namespace, label_selector))
            if hit is not None:
                return hit
        return self._client.list(api_version, kind, namespace, label_selector=label_selector, **kwargs)

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
        try:
            self._cache.put(obj, insert=insert)
        except Exception as error:
            log.debug("cache write-through failed: %s", error)

    def create(self, body: dict) -> dict:
        return self._write(lambda: self._client.create(body), insert=True)

    def replace(self, body: dict) -> dict:
        return self._write(lambda: self._client.replace(body))

    def replace_status(self, body: dict) -> dict:
        return self._write(lambda: self._client.replace_status(body))

    def patch_merge(self, *args: Any, **kwargs: Any) -> dict:
        return self._write(lambda: self._client.patch_merge(*args, **kwargs))

    def patch_json(self, *args: Any, **kwargs: Any) -> dict:
        return self._write(lambda: self._client.patch_json(*args, **kwargs))

    def delete(self, *args: Any, **kwargs: Any) -> dict | None:
        return self._write(lambda: self._client.delete(*args, **kwargs))

    def delete_if_exists(self, *args: Any, **kwargs: Any) -> bool:
        return self._write(lambda: self._client.delete_if_exists(*args, **kwargs))

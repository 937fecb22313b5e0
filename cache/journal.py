"""A run's journal: what one run did through its cached client (:mod:`cache.reader`) that the engine settles when
the run ends (:func:`engine.runner.finish`).

* The object versions the run got by name (:meth:`RunJournal.seen`): a watch event of one of them brings the run
  nothing it has not acted on (:mod:`engine.own_writes`).
* With ``defer_writes`` (the engine's runs), the results of the run's writes, kept until the run ends and put into
  the cache in the same round trip as the run's other Redis work (:meth:`RunJournal.deferred_puts`): one round trip
  per run instead of one per write. Meanwhile the client answers the run's reads from them, so the run reads its own
  writes; other runs see them once the watch event or the run's end puts them in, and a run that reads an older
  version meanwhile meets the write's precondition, as with any stale read.
"""

from __future__ import annotations

import logging

from cache import model as cache_model
from cache.store import UPDATED, WRITTEN, ObjectCache, ScriptCall
from poolboy.observability import version_id

log = logging.getLogger(__name__)

#: the most object versions one run reports as got (:meth:`RunJournal.seen`): they travel as arguments of the run's
#: last Redis script, which must stay small; a run past it is only run again by an event it could have ignored
MAX_SEEN = 256


class RunJournal:
    """One run's journal (see the module docstring): the cached client records into it, the engine reads it at the
    end of the run."""

    def __init__(self, *, defer_writes: bool = True) -> None:
        #: True: write results wait here for the run's end; False: the client puts each into the cache at once
        self.defer_writes = defer_writes
        #: identity -> (the last result of this run's writes of the object, whether one of them created it)
        self._written: dict[str, tuple[dict, bool]] = {}
        #: the write ids (:func:`poolboy.observability.write_id`) of what the run got by name, in order
        self._seen: dict[str, None] = {}

    # --- what the run got ----------------------------------------------------------------------------------------

    def saw(self, obj: dict) -> None:
        """The run got this version of ``obj`` by name."""
        ident = version_id(obj)
        if ident:
            self._seen[ident] = None

    def seen(self) -> list[str]:
        """The write ids of every object version this run got by name, at most :data:`MAX_SEEN`.
        Lists are left out: a pool run lists every handle of its pool, and their events are few."""
        return list(self._seen)[:MAX_SEEN]

    # --- what the run wrote --------------------------------------------------------------------------------------

    def wrote(self, obj: dict, *, created: bool) -> None:
        """Keep the result of a write for the run's end (``created``: the write made the object)."""
        if (obj.get("metadata") or {}).get("name") and obj.get("kind"):
            ident = cache_model.identity(obj)
            earlier = self._written.get(ident)
            self._written[ident] = (obj, created or (earlier is not None and earlier[1]))

    def written(self, ident: str) -> dict | None:
        """The latest result of this run's writes of the object ``ident`` (None: the run did not write it)."""
        found = self._written.get(ident)
        return None if found is None else found[0]

    def written_of(self, api_version: str, kind: str, namespace: str | None) -> dict[str, dict]:
        """Identity -> the latest result of this run's writes, for the objects of a kind (in a namespace)."""
        return {ident: obj for ident, (obj, _) in self._written.items()
                if obj.get("apiVersion") == api_version and obj.get("kind") == kind
                and cache_model.in_namespace(obj, namespace)}

    def deferred_puts(self, cache: ObjectCache) -> list[ScriptCall]:
        """The cache writes of this run's deferred writes (the latest result per object), for the run's last
        round trip; forgotten here once taken."""
        calls = []
        for obj, created in self._written.values():
            try:
                call = cache.put_call(obj, mode=WRITTEN if created else UPDATED)
            except Exception as error:  # e.g. nested deeper than the encoder goes: the cache only costs speed
                log.debug("cache write-through failed: %s", error)
                continue
            if call is not None:
                calls.append(call)
        self._written.clear()
        return calls

"""The shared read cache in Redis: controller-runtime's informer cache, shared by every worker process.

The active watcher writes each object's latest version as it sees it (on every event and re-list) and removes it on
DELETED; workers read objects by identity and answer label-selected lists from the indexes of
:mod:`cache.model`. Workers also write through what their own writes returned, so the next run (of this
object or of another one reading it) does not read the version before its own write.

Correctness never depends on the cache (docs/behaviour.md#design-rules, rules 3 and 6):

* every write computed from a read keeps its precondition, so a stale read costs one failed write and a fresh read
  (:class:`cache.reader.CachedKubeClient` switches to API reads for the rest of the run);
* a version only replaces an older one, without comparing resourceVersions (opaque strings): the watch stream's order
  decides, and a worker's write-through waits for the stream to reach it (:data:`PUT`); a DELETED leaves a short
  tombstone so a late write-through cannot resurrect the object;
* readers use the cache only while the watcher's ``alive`` key exists (renewed by the active watcher, gone when it
  dies, when Redis restarts empty or on FLUSHALL) and lists only for scopes whose informer has listed since the
  watcher took over (``synced``); otherwise they read from the API.

Redis layout (the keys: :mod:`workqueue.keyspace`, its cache section): per object a HASH ``{rv, doc, idx}`` (``idx``
= its index memberships, so an update moves it between indexes atomically); per index a SET (or HASH, or ZSET) of
object ids; a SET of listed scopes; the watcher's heartbeat. Not for Redis Cluster (the scripts touch keys computed
at run time).
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson
import redis

from cache import model as cache_model
from poolboy.domain.binding import candidates
from poolboy.kube.interfaces import IndexMatch
from redisscripts import Call, Script
from workqueue import keyspace
from workqueue.roundtrip import RoundTrip

log = logging.getLogger(__name__)

#: a registered script with its keys and arguments, a step of a round trip (:mod:`workqueue.roundtrip`)
ScriptCall = Call[Any]

#: where a put comes from (:data:`PUT`): a watch event, a list, a worker's write that may create the entry, or one that
#: only updates it
WATCHED, LISTED, WRITTEN, UPDATED = "w", "l", "t", "u"
#: how long a DELETED is remembered against late writes of older versions
TOMBSTONE_TTL_S = 120
#: how long a reader trusts the ``alive`` key it saw for single-object reads (a miss still goes to the API, so only a
#: dead watcher's last versions can be read this much longer, on top of the key's own TTL); lists check every time
ALIVE_MEMO_S = 1.0

#: ``mode``: :data:`WATCHED`, :data:`LISTED`, :data:`WRITTEN` or :data:`UPDATED`; ``index_prefix``: where the index
#: keys start (:data:`workqueue.keyspace.CACHE_INDEXES`); ``indexes``: the object's index entries
#: (:func:`cache.model.indexes`)
PUT = Script("cache/put", keys=("object",), args=("rv", "doc", "mode", "ident", "index_prefix"), rest="indexes")
#: ``rv`` '' for an unconditional delete (a list no longer has the object); ``tombstone_ttl`` in seconds
DELETE = Script("cache/delete", keys=("object",), args=("rv", "ident", "index_prefix", "tombstone_ttl"))


def scope(api_version: str, kind: str, namespace: str | None) -> str:
    """A listed collection: ``apiVersion|kind|namespace`` (``*`` = all namespaces or cluster-scoped)."""
    return f"{api_version}|{kind}|{namespace or '*'}"


def read_if_synced(client: redis.Redis, api_version: str, kind: str, namespace: str | None,
                   read: Callable[[Any], Any]) -> Any:
    """``read(pipe)``'s reply (a list of replies when it queued several commands) when the cache can answer for
    that collection (a live watcher, and it has listed the collection since it took over), else None; one round
    trip either way."""
    pipe = client.pipeline(transaction=False)
    pipe.exists(keyspace.CACHE_ALIVE)
    pipe.smismember(keyspace.CACHE_SYNCED, [scope(api_version, kind, "*"), scope(api_version, kind, namespace)])
    read(pipe)
    alive, synced, *replies = pipe.execute()
    if not (alive and any(synced)):
        return None
    return replies[0] if len(replies) == 1 else replies


class ObjectCache:
    """Reads and writes of the cache; one instance per process (a redis-py client is thread-safe)."""

    def __init__(self, client: redis.Redis, domain: str) -> None:
        self.redis = client
        self.domain = domain
        self.extra_indexes = candidates.cache_entries  # the domain's binding indexes
        self.presence_labels = candidates.PRESENCE_LABELS  # the labels the domain selects on by presence
        self._put = PUT.register(client)
        self._delete = DELETE.register(client)
        self._alive_until = 0.0  # monotonic time until which the alive key seen last is trusted (gets only)

    # --- writes (watcher, and write-through from workers) ------------------------------------------------------

    def put(self, obj: dict, *, mode: str = WATCHED, pipe: Any = None) -> None:
        """Store ``obj`` unless the cache knows a later version (:data:`PUT`); ``mode`` says where it comes from:
        :data:`WATCHED` (a watch event), :data:`LISTED`, :data:`WRITTEN` (a worker's write that may create the entry)
        or :data:`UPDATED` (one that only updates an existing entry)."""
        call = self.put_call(obj, mode=mode)
        if call is not None:
            call.run(pipe)

    def put_call(self, obj: dict, *, mode: str = WATCHED) -> ScriptCall | None:
        """:meth:`put` as (script, keys, args), for a caller that pipelines it with other scripts (None: not
        cacheable)."""
        metadata = obj.get("metadata") or {}
        rv = metadata.get("resourceVersion")
        if not rv or not metadata.get("name") or not obj.get("kind"):
            return None
        ident = cache_model.identity(obj)
        every_namespace = cache_model.kind_index(obj.get("apiVersion") or "", obj["kind"], "*")
        indexes = [*cache_model.indexes(obj, self.domain, self.extra_indexes, self.presence_labels), every_namespace]
        return self._put.call(object=keyspace.cached_object(ident), rv=rv,
                              doc=orjson.dumps(cache_model.stored_form(obj)), mode=mode, ident=ident,
                              index_prefix=keyspace.CACHE_INDEXES, indexes=indexes)

    def delete(self, obj: dict, *, pipe: Any = None) -> None:
        call = self.delete_call(obj)
        if call is not None:
            call.run(pipe)

    def delete_call(self, obj: dict) -> ScriptCall | None:
        """:meth:`delete` (a tombstone) as (script, keys, args), like :meth:`put_call`."""
        metadata = obj.get("metadata") or {}
        if not metadata.get("name"):
            return None
        return self._delete_call(cache_model.identity(obj), metadata.get("resourceVersion") or "")

    def _delete_call(self, ident: str, rv: str) -> ScriptCall:
        return self._delete.call(object=keyspace.cached_object(ident), rv=rv, ident=ident,
                                 index_prefix=keyspace.CACHE_INDEXES, tombstone_ttl=TOMBSTONE_TTL_S)

    def put_many(self, objects: Iterable[dict], chunk: int = 200) -> None:
        """Pipelined puts, ``chunk`` objects per round trip: a re-list of 10 000 objects must not build one
        pipeline of every document at once (the watcher's peak memory)."""
        pipe = self.redis.pipeline(transaction=False)
        for count, obj in enumerate(objects, 1):
            self.put(obj, mode=LISTED, pipe=pipe)
            if count % chunk == 0:
                pipe.execute()
        pipe.execute()

    def prune(self, api_version: str, kind: str, namespace: str | None, listed: set[str],
              terms: tuple[cache_model.Term, ...] = ()) -> int:
        """Remove cached objects of a just-listed collection that the list did not return (deleted while no watcher
        was watching, or by a previous leader's stale view)."""
        members = self.redis.smembers(keyspace.cache_index(cache_model.kind_index(api_version, kind, namespace or "*")))
        stale = [ident for ident in map(_text, members) if ident not in listed]
        removed = 0
        for ident in stale:
            doc = self.redis.hget(keyspace.cached_object(ident), "doc")
            obj = orjson.loads(doc) if doc else None
            if obj is not None and terms and not cache_model.selector_matches(terms, obj):
                continue  # outside this informer's selector: not its to prune
            self._delete_call(ident, "").run()
            removed += 1
        return removed

    def mark_synced(self, api_version: str, kind: str, namespace: str | None) -> None:
        self.redis.sadd(keyspace.CACHE_SYNCED, scope(api_version, kind, namespace))

    def reset(self) -> None:
        """A new watcher takes over: no list is answered from the cache until its informers have listed again."""
        self.redis.delete(keyspace.CACHE_SYNCED)

    def heartbeat(self, ttl_s: float) -> None:
        self.redis.set(keyspace.CACHE_ALIVE, "1", px=int(ttl_s * 1000))

    def retire(self) -> None:
        self.redis.delete(keyspace.CACHE_ALIVE, keyspace.CACHE_SYNCED)

    # --- reads (workers) ----------------------------------------------------------------------------------------

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict | None:
        """The cached object, or None on a miss, a tombstone, or when no watcher keeps the cache alive."""
        pipe = self.redis.pipeline(transaction=False)
        self.get_commands(pipe, api_version, kind, namespace, name)
        return self.get_reply(pipe.execute())

    def get_commands(self, pipe: Any, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        """Queue :meth:`get`'s commands on ``pipe`` (a caller's pipeline); :meth:`get_reply` reads their replies."""
        self._gets_commands(pipe, [(api_version, kind, namespace, name)])

    def get_reply(self, replies: builtins.list[Any]) -> dict | None:
        return self._gets_reply(replies, 1)[0]

    def get_step(self, trip: RoundTrip, api_version: str, kind: str, namespace: str | None,
                 name: str) -> Callable[[], dict | None]:
        """:meth:`get` as steps of a caller's round trip; what it returns reads the object once the trip is sent
        (None also when Redis failed the read: the cache only costs speed)."""
        alive = trip.command("EXISTS", keyspace.CACHE_ALIVE) if time.monotonic() >= self._alive_until else None
        ident = cache_model.object_id(api_version, kind, namespace, name)
        doc = trip.command("HGET", keyspace.cached_object(ident), "doc")

        def read() -> dict | None:
            if doc.error is not None or (alive is not None and (alive.error is not None or not alive.value)):
                return None
            if alive is not None:
                self._alive_until = time.monotonic() + ALIVE_MEMO_S
            return cache_model.decode(doc.value)
        return read

    def get_many(self, refs: Sequence[tuple[str, str, str | None, str]]) -> builtins.list[dict | None]:
        """:meth:`get` of each ``(apiVersion, kind, namespace, name)``, in one round trip."""
        if not refs:
            return []
        pipe = self.redis.pipeline(transaction=False)
        self._gets_commands(pipe, refs)
        return self._gets_reply(pipe.execute(), len(refs))

    def _gets_commands(self, pipe: Any, refs: Iterable[tuple[str, str, str | None, str]]) -> None:
        """The objects, after the ``alive`` key unless an answer younger than :data:`ALIVE_MEMO_S` vouches for it."""
        if time.monotonic() >= self._alive_until:
            pipe.exists(keyspace.CACHE_ALIVE)
        for api_version, kind, namespace, name in refs:
            pipe.hget(keyspace.cached_object(cache_model.object_id(api_version, kind, namespace, name)), "doc")

    def _gets_reply(self, replies: builtins.list[Any], count: int) -> builtins.list[dict | None]:
        if len(replies) == count:  # the alive key was vouched for
            alive, docs = 1, replies
        else:
            alive, *docs = replies
            if alive:
                self._alive_until = time.monotonic() + ALIVE_MEMO_S
        return [cache_model.decode(doc) if alive else None for doc in docs]

    def list(self, api_version: str, kind: str, namespace: str | None, label_selector: str | None, *,
             index: IndexMatch | None = None) -> builtins.list[dict] | None:
        """The objects a list would return, or None when the cache cannot answer (then ask the API).

        With ``index`` (one of the domain's HASH indexes, :func:`cache.model.indexes`), the members it files under
        its values, filtered by the selector: an index names the objects a caller wants more narrowly than a label
        does (the unbound handles of a pool, not every handle of it)."""
        try:
            terms = cache_model.parse_selector(label_selector)
        except cache_model.Unanswerable:
            return None

        def members(pipe: Any) -> None:
            if index is None:
                plan = cache_model.plan_list(api_version, kind, namespace, terms, self.domain, self.presence_labels)
                pipe.sinter([keyspace.cache_index(name) for name in plan])
            else:
                for name in index.names():
                    pipe.hkeys(keyspace.cache_index(name))

        replies = read_if_synced(self.redis, api_version, kind, namespace, members)
        if replies is None:
            return None
        found = [replies] if index is None or len(index.values) == 1 else replies
        idents = sorted({_text(member) for reply in found for member in reply})
        if not idents:
            return []
        result = []
        for doc in self._docs(idents):
            if not doc:
                continue
            obj = orjson.loads(doc)
            if obj.get(cache_model.WITHHELD):
                return None  # a Secret: its values are only in the API
            if cache_model.in_namespace(obj, namespace) and cache_model.selector_matches(terms, obj) \
                    and (index is None or index.matches(obj)):
                result.append(obj)
        return result

    def names(self, api_version: str, kind: str, namespace: str | None) -> builtins.list[tuple[str, str]] | None:
        """``(namespace, name)`` of every cached object of a kind (``namespace`` None: all namespaces), or None
        when the cache cannot answer. Cheap: reads one index, no object."""
        index = keyspace.cache_index(cache_model.kind_index(api_version, kind, namespace or "*"))
        members = read_if_synced(self.redis, api_version, kind, namespace, lambda pipe: pipe.smembers(index))
        if members is None:
            return None
        result = []
        for member in members:
            _, _, ns, name = member.decode().split("|", 3)
            result.append((ns, name))
        return sorted(result)

    def _docs(self, idents: builtins.list[str]) -> builtins.list[bytes | None]:
        pipe = self.redis.pipeline(transaction=False)
        for ident in idents:
            pipe.hget(keyspace.cached_object(ident), "doc")
        return pipe.execute()


def _text(member: bytes | str) -> str:
    """A Redis reply member as text (the client answers bytes; its type stubs also allow str)."""
    return member.decode() if isinstance(member, bytes) else member

"""The in-memory object store: one global resourceVersion, objects indexed by kind and namespace, a bounded
event history and the set of live watchers.

Everything runs on one asyncio loop, so a commit (bump rv, store, record, fan out to watcher queues) is atomic;
registering a watcher and replaying its history therefore can never miss or reorder an event. Stored objects are
treated as immutable: writers always store a fresh dict.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from devcluster import versions
from devcluster.errors import gone

StoreKey = tuple[str, str]  # (group, plural)
Obj = dict[str, Any]


@dataclass(slots=True)
class Event:
    rv: int
    key: StoreKey
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    old: Obj | None
    encoded: dict[str, bytes] | None = None  # apiVersion → serialized watch line, shared by all watchers

    @property
    def namespace(self) -> str:
        return self.obj["metadata"].get("namespace", "")


@dataclass(eq=False)
class Watcher:
    """One watch stream's filter and its private, unbounded queue (so slow readers never block writers)."""

    key: StoreKey
    namespace: str | None
    predicate: Callable[[Obj], bool] | None
    start_rv: int
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)

    def offer(self, event: Event) -> None:
        if event.rv <= self.start_rv:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        translated = self.translate(event)
        if translated is not None:
            self.queue.put_nowait(translated)

    def translate(self, event: Event) -> Event | tuple[str, Obj] | None:
        """Selector transitions as the real watch cache: moving out → DELETED (old content, new rv), in → ADDED."""
        if self.predicate is None:
            return event
        now = self.predicate(event.obj)
        if event.type == "ADDED":
            return event if now else None
        if event.type == "DELETED":
            return event if now else None
        before = event.old is not None and self.predicate(event.old)
        if now and before:
            return event
        if now:
            return ("ADDED", event.obj)
        if before and event.old is not None:
            old = dict(event.old)
            old["metadata"] = {**event.old["metadata"], "resourceVersion": versions.text(event.rv)}
            return ("DELETED", old)
        return None


class Store:
    def __init__(self, history_size: int = 10000) -> None:
        self.rv = 1
        self.objects: dict[StoreKey, dict[str, dict[str, Obj]]] = {}
        self.history: deque[Event] = deque(maxlen=max(1, history_size))
        self.floor = 1  # the oldest resourceVersion a watch may still resume from
        self.watchers: dict[StoreKey, set[Watcher]] = {}
        self.dependents: dict[str, set[tuple[StoreKey, str, str]]] = {}  # owner uid → dependents
        self.listeners: list[Callable[[Event], None]] = []

    # --- reads -----------------------------------------------------------------------------------------------

    def get(self, key: StoreKey, namespace: str, name: str) -> Obj | None:
        bucket = self.objects.get(key)
        if bucket is None:
            return None
        names = bucket.get(namespace)
        return names.get(name) if names else None

    def iter(self, key: StoreKey, namespace: str | None) -> Iterator[Obj]:
        """Objects of ``key`` in ``namespace`` (all namespaces when None), sorted by namespace then name."""
        bucket = self.objects.get(key) or {}
        spaces = [namespace] if namespace is not None else sorted(bucket)
        for space in spaces:
            names = bucket.get(space)
            if names:
                for name in sorted(names):
                    yield names[name]

    def count(self, key: StoreKey, namespace: str | None) -> int:
        bucket = self.objects.get(key) or {}
        if namespace is not None:
            return len(bucket.get(namespace) or {})
        return sum(len(names) for names in bucket.values())

    def namespace_is_empty(self, namespace: str) -> bool:
        return all(not bucket.get(namespace) for key, bucket in self.objects.items() if key != ("", "namespaces"))

    # --- writes ----------------------------------------------------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def commit(self, key: StoreKey, event_type: str, obj: Obj, old: Obj | None) -> Obj:
        """Store (or remove, for DELETED) ``obj`` under a new resourceVersion and fan the event out."""
        rv = self.next_rv()
        obj["metadata"]["resourceVersion"] = versions.text(rv)
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        bucket = self.objects.setdefault(key, {})
        if event_type == "DELETED":
            names = bucket.get(namespace)
            if names is not None:
                names.pop(name, None)
                if not names:
                    del bucket[namespace]
        else:
            bucket.setdefault(namespace, {})[name] = obj
        self._index_owners(key, namespace, name, old, None if event_type == "DELETED" else obj)
        event = Event(rv, key, event_type, obj, old)
        if len(self.history) == self.history.maxlen:
            self.floor = self.history[0].rv
        self.history.append(event)
        for watcher in self.watchers.get(key, ()):
            watcher.offer(event)
        for listener in self.listeners:
            listener(event)
        return obj

    def drop_kind(self, key: StoreKey) -> list[Obj]:
        """Remove every object of a kind (its CRD was deleted), emitting DELETED events."""
        removed = []
        for obj in list(self.iter(key, None)):
            copy = {**obj, "metadata": dict(obj["metadata"])}
            removed.append(self.commit(key, "DELETED", copy, obj))
        return removed

    def _index_owners(self, key: StoreKey, namespace: str, name: str, old: Obj | None, new: Obj | None) -> None:
        entry = (key, namespace, name)
        for obj, add in ((old, False), (new, True)):
            for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
                uid = ref.get("uid")
                if not uid:
                    continue
                if add:
                    self.dependents.setdefault(uid, set()).add(entry)
                else:
                    refs = self.dependents.get(uid)
                    if refs is not None:
                        refs.discard(entry)
                        if not refs:
                            del self.dependents[uid]

    # --- history and watchers --------------------------------------------------------------------------------

    def set_history(self, size: int) -> None:
        kept = list(self.history)[-max(1, size):]
        if len(kept) < len(self.history):
            self.floor = kept[0].rv - 1 if kept else self.rv
        self.history = deque(kept, maxlen=max(1, size))

    def check_resumable(self, rv: int) -> None:
        if rv < self.floor:
            raise gone(f"too old resource version: {rv} ({self.floor})")

    def watch(self, watcher: Watcher, replay: bool) -> None:
        """Register ``watcher``; with ``replay`` first queue the history after its start resourceVersion."""
        if replay:
            self.check_resumable(watcher.start_rv)
            for event in self.history:
                if event.key == watcher.key:
                    watcher.offer(event)
        self.watchers.setdefault(watcher.key, set()).add(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        watchers = self.watchers.get(watcher.key)
        if watchers is not None:
            watchers.discard(watcher)

    def close_watchers(self, key: StoreKey) -> None:
        """End every watch on ``key`` (its kind stopped being served)."""
        for watcher in self.watchers.pop(key, set()):
            watcher.queue.put_nowait(None)

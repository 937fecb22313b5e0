"""Deletion machinery that the real control plane runs asynchronously: the garbage collector (ownerReferences
with Background / Foreground / Orphan propagation) and the namespace controller (Terminating → contents deleted →
namespace removed). Work is scheduled with ``loop.call_soon`` so a DELETE answers first, like the real server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from devcluster.cluster import NAMESPACES, Cluster
from devcluster.errors import ApiError
from devcluster.registry import ResourceType
from devcluster.store import Event, Obj, StoreKey


class Collector:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.store = cluster.store
        self.uids: dict[str, tuple[StoreKey, str, str]] = {}
        self.store.listeners.append(self._on_event)
        cluster.on_delete_started.append(self._on_delete_started)
        for bucket_key, bucket in self.store.objects.items():
            for names in bucket.values():
                for obj in names.values():
                    self._track(bucket_key, obj)

    def _later(self, action: Callable[[], None]) -> None:
        try:
            asyncio.get_running_loop().call_soon(self._guarded, action)
        except RuntimeError:  # no loop yet (startup): run inline
            self._guarded(action)

    @staticmethod
    def _guarded(action: Callable[[], None]) -> None:
        # The object may have changed or vanished meanwhile; a later event retries.
        with contextlib.suppress(ApiError):
            action()

    def _track(self, key: StoreKey, obj: Obj) -> None:
        metadata = obj["metadata"]
        self.uids[metadata["uid"]] = (key, metadata.get("namespace", ""), metadata["name"])

    def _lookup(self, uid: str) -> tuple[ResourceType, Obj] | None:
        where = self.uids.get(uid)
        if where is None:
            return None
        rtype = self.cluster.registry.by_store_key(where[0])
        obj = self.store.get(*where)
        if rtype is None or obj is None:
            return None
        return rtype, obj

    # --- event hooks -----------------------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        metadata = event.obj["metadata"]
        if event.type == "DELETED":
            self.uids.pop(metadata["uid"], None)
            uid = metadata["uid"]
            self._later(lambda: self._collect_dependents(uid))
            for ref in metadata.get("ownerReferences") or []:
                owner_uid = ref.get("uid")
                self._later(lambda u=owner_uid: self._maybe_finish_owner(u))
            namespace = metadata.get("namespace")
            if namespace:
                self._later(lambda: self._maybe_finish_namespace(namespace))
        else:
            self._track(event.key, event.obj)
            if metadata.get("ownerReferences"):
                where = (event.key, metadata.get("namespace", ""), metadata["name"])
                self._later(lambda: self._check_owners(*where))

    def _on_delete_started(self, rtype: ResourceType, obj: Obj, policy: str) -> None:
        uid = obj["metadata"]["uid"]
        if rtype.store_key == NAMESPACES:
            name = obj["metadata"]["name"]
            self._later(lambda: self._empty_namespace(name))
        elif policy == "Foreground":
            self._later(lambda: self._foreground(uid))
        elif policy == "Orphan":
            self._later(lambda: self._orphan(uid))

    # --- garbage collection ----------------------------------------------------------------------------------

    def _dependents(self, uid: str) -> list[tuple[ResourceType, Obj]]:
        found = []
        for key, namespace, name in list(self.store.dependents.get(uid, ())):
            obj = self.store.get(key, namespace, name)
            rtype = self.cluster.registry.by_store_key(key)
            if obj is not None and rtype is not None:
                found.append((rtype, obj))
        return found

    def _collect_dependents(self, uid: str) -> None:
        """Background propagation: re-examine every dependent of a deleted owner."""
        for rtype, obj in self._dependents(uid):
            metadata = obj["metadata"]
            self._check_owners(rtype.store_key, metadata.get("namespace", ""), metadata["name"])

    def _check_owners(self, key: StoreKey, namespace: str, name: str) -> None:
        """As the real garbage collector: all owners gone → delete; some gone → drop the dangling references."""
        obj = self.store.get(key, namespace, name)
        rtype = self.cluster.registry.by_store_key(key)
        if obj is None or rtype is None or obj["metadata"].get("deletionTimestamp"):
            return
        refs = obj["metadata"].get("ownerReferences") or []
        live = [r for r in refs if self._lookup(r.get("uid", "")) is not None]
        if len(live) == len(refs):
            return
        if not live:
            self._delete(rtype, obj, "Background")
            return
        new = {**obj, "metadata": {**obj["metadata"], "ownerReferences": live}}
        self.cluster.update(rtype, namespace, name, new)

    def _delete(self, rtype: ResourceType, obj: Obj, policy: str) -> None:
        metadata = obj["metadata"]
        with contextlib.suppress(ApiError):
            self.cluster.delete(rtype, metadata.get("namespace", ""), metadata["name"],
                                {"propagationPolicy": policy})

    def _foreground(self, uid: str) -> None:
        for rtype, obj in self._dependents(uid):
            self._delete(rtype, obj, "Foreground")
        self._maybe_finish_owner(uid)

    def _maybe_finish_owner(self, uid: str) -> None:
        """Drop ``foregroundDeletion`` once no dependent with ``blockOwnerDeletion`` remains."""
        found = self._lookup(uid)
        if found is None:
            return
        rtype, owner = found
        if "foregroundDeletion" not in (owner["metadata"].get("finalizers") or []):
            return
        for _, dependent in self._dependents(uid):
            for ref in dependent["metadata"].get("ownerReferences") or []:
                if ref.get("uid") == uid and ref.get("blockOwnerDeletion"):
                    return
        self._remove_finalizer(rtype, owner, "foregroundDeletion")

    def _orphan(self, uid: str) -> None:
        for rtype, obj in self._dependents(uid):
            refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            new = {**obj, "metadata": {**obj["metadata"], "ownerReferences": refs}}
            if not refs:
                del new["metadata"]["ownerReferences"]
            metadata = obj["metadata"]
            self.cluster.update(rtype, metadata.get("namespace", ""), metadata["name"], new)
        found = self._lookup(uid)
        if found is not None:
            self._remove_finalizer(*found, "orphan")

    def _remove_finalizer(self, rtype: ResourceType, obj: Obj, finalizer: str) -> None:
        metadata = obj["metadata"]
        finalizers = [f for f in metadata.get("finalizers") or [] if f != finalizer]
        new = {**obj, "metadata": {**metadata, "finalizers": finalizers}}
        self.cluster.update(rtype, metadata.get("namespace", ""), metadata["name"], new)

    # --- namespace controller --------------------------------------------------------------------------------

    def _empty_namespace(self, namespace: str) -> None:
        for rtype in self.cluster.kinds_in_namespaces():
            self.cluster.delete_collection(rtype, namespace, None, {"propagationPolicy": "Background"})
        self._maybe_finish_namespace(namespace)

    def _maybe_finish_namespace(self, namespace: str) -> None:
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None or not ns["metadata"].get("deletionTimestamp") or not self.store.namespace_is_empty(namespace):
            return
        if ns["metadata"].get("finalizers"):
            return
        rtype = self.cluster.registry.get("", "v1", "namespaces")
        assert rtype is not None
        self.cluster.remove(rtype, ns)

"""Watch streams: newline-delimited JSON events over a chunked HTTP response, fed from a per-watch queue.

The snapshot of initial objects and the registration of the watcher happen in one synchronous step, so no event
can fall between them; the writer then drains the queue in batches, sending BOOKMARKs when idle.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
from aiohttp import web

from devcluster import errors, versions
from devcluster.cluster import Cluster, present
from devcluster.errors import ApiError
from devcluster.meta import dumps
from devcluster.registry import ResourceType
from devcluster.selectors import Predicate
from devcluster.store import Event, Obj, Watcher
from devcluster.tables import table

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes")


class WatchStream:
    def __init__(self, cluster: Cluster, rtype: ResourceType, namespace: str | None, predicate: Predicate | None,
                 query: Any, bookmark_interval: float, as_table: bool = False) -> None:
        self.cluster = cluster
        self.rtype = rtype
        self.namespace = namespace
        self.predicate = predicate
        self.query = query
        self.bookmarks = _truthy(query.get("allowWatchBookmarks"))
        self.bookmark_interval = bookmark_interval
        self.as_table = as_table  # kubectl get -w asks for Table-shaped event objects
        self.include = query.get("includeObject", "Metadata")
        timeout = query.get("timeoutSeconds")
        try:
            self.timeout = float(timeout) if timeout not in (None, "") else None
        except ValueError:
            raise errors.bad_request(f"invalid timeoutSeconds: {timeout}") from None

    def _object(self, obj: Obj) -> Obj:
        shown = present(self.rtype, obj)
        if self.as_table:
            return table(self.rtype, [shown], {"resourceVersion": shown["metadata"]["resourceVersion"]},
                         self.include)
        return shown

    def _line(self, item: Event | tuple[str, Obj]) -> bytes:
        if isinstance(item, Event) and not self.as_table:
            api_version = self.rtype.api_version
            cache = item.encoded
            if cache is None:
                cache = item.encoded = {}
            line = cache.get(api_version)
            if line is None:
                line = cache[api_version] = dumps(
                    {"type": item.type, "object": present(self.rtype, item.obj)}) + b"\n"
            return line
        kind, obj = (item.type, item.obj) if isinstance(item, Event) else item
        return dumps({"type": kind, "object": self._object(obj)}) + b"\n"

    def _bookmark(self, initial_end: bool = False) -> bytes:
        metadata: dict[str, Any] = {"resourceVersion": versions.text(self.cluster.store.rv)}
        if initial_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        return orjson.dumps({"type": "BOOKMARK", "object": {
            "kind": self.rtype.kind, "apiVersion": self.rtype.api_version, "metadata": metadata}}) + b"\n"

    def _register(self) -> tuple[Watcher, list[bytes]]:
        """Snapshot + subscribe atomically; returns the watcher and the lines to send first."""
        store = self.cluster.store
        rv_text = self.query.get("resourceVersion", "")
        send_initial = _truthy(self.query.get("sendInitialEvents"))
        try:
            rv = versions.number(rv_text) if rv_text not in ("", None, "0") else 0
        except ValueError:
            raise errors.bad_request(f"invalid resourceVersion: {rv_text}") from None
        first: list[bytes] = []
        if send_initial or rv == 0:
            watcher = Watcher(self.rtype.store_key, self.namespace, self.predicate, store.rv)
            for obj in store.iter(self.rtype.store_key, self.namespace):
                if self.predicate is None or self.predicate(obj):
                    first.append(self._line(("ADDED", obj)))
            if send_initial:
                first.append(self._bookmark(initial_end=True))
            store.watch(watcher, replay=False)
        else:
            watcher = Watcher(self.rtype.store_key, self.namespace, self.predicate, rv)
            store.watch(watcher, replay=True)
        return watcher, first

    async def serve(self, request: web.Request) -> web.StreamResponse:
        try:
            watcher, first = self._register()
        except ApiError as error:
            if error.code != 410:
                raise
            return await self._expired(request, error)
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            if first:
                await response.write(b"".join(first))
            await self._pump(watcher, response)
        except ConnectionResetError:
            return response
        finally:  # also on cancellation, which aiohttp raises when the client goes away
            self.cluster.store.unwatch(watcher)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()
        return response

    async def _expired(self, request: web.Request, error: ApiError) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(orjson.dumps({"type": "ERROR", "object": error.status()}) + b"\n")
        await response.write_eof()
        return response

    async def _pump(self, watcher: Watcher, response: web.StreamResponse) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout if self.timeout else None
        next_bookmark = loop.time() + self.bookmark_interval
        queue = watcher.queue
        while True:
            now = loop.time()
            waits = []
            if deadline is not None:
                waits.append(deadline - now)
            if self.bookmarks:
                waits.append(next_bookmark - now)
            wait = min(waits) if waits else None
            if wait is not None and wait <= 0:
                if deadline is not None and now >= deadline:
                    return
                await response.write(self._bookmark())
                next_bookmark = loop.time() + self.bookmark_interval
                continue
            if queue.empty():
                try:
                    item = await asyncio.wait_for(queue.get(), wait)
                except TimeoutError:
                    continue
            else:
                item = queue.get_nowait()
            lines = []
            while True:
                if item is None:
                    if lines:
                        await response.write(b"".join(lines))
                    return
                lines.append(self._line(item))
                if queue.empty():
                    break
                item = queue.get_nowait()
            await response.write(b"".join(lines))

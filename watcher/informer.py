"""One list-then-watch loop for one (apiVersion, kind, namespace, label selector).

The loop lists (so objects that existed before the watch are not missed), hands every listed object to the
callback, then watches from the list's resourceVersion with bookmarks. A stream that ends normally (the server's
``timeoutSeconds``), or broken by a transient error (network, 5xx, 429), is resumed from the last seen
resourceVersion, as client-go's reflector does; 410 Gone or any other failure leads to a fresh list, after a jittered
exponential backoff for errors. A callback that fails on one event is logged
and the loop goes on: one bad object must never blind the watcher to all the others.

The informer keeps only the *metadata* of the objects it has seen (not a full cache), so that an object deleted
while the watch was down is still reported, as a synthetic ``DELETED`` event, after the re-list.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cache import model as cache_model
from poolboy.kube import ApiError, Gone, KubeClient
from poolboy.observability import labelled
from poolboy.utils.backoff import Backoff
from watcher import metrics

log = logging.getLogger(__name__)

#: ``callback(event_type, obj)``; event_type is ADDED / MODIFIED / DELETED from the watch, or LISTED on a (re)list
EventCallback = Callable[[str, dict], None]
#: ``on_list(informer, items)`` once per (re)list, before any LISTED callback (e.g. to fill and prune a cache first)
ListCallback = Callable[["Informer", list], None]

LISTED = "LISTED"
#: the longest wait between an informer's attempts: one request each, so an API server that is back is watched again
#: within seconds, not after a half-minute backoff that leaves the watcher deaf
RETRY_CAP = 5.0


@dataclass
class Informer:
    kube: KubeClient
    api_version: str
    kind: str
    callback: EventCallback
    namespace: str | None = None
    label_selector: str | None = None
    watch_timeout: int = 300
    backoff: Backoff = field(default_factory=lambda: Backoff(cap=RETRY_CAP))
    on_list: ListCallback | None = None

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._relist = threading.Event()
        self._thread: threading.Thread | None = None
        #: (namespace, name) -> metadata-only copy of the last version seen; for deletions missed while down
        self._seen: dict[tuple[str, str], dict] = {}
        self.resource_version: str = ""
        self.synced = threading.Event()
        #: monotonic time at which the callback now running began (None when idle): a delivery that never ends
        #: (e.g. a full delivery queue while Redis is away) is a stuck watch loop, which /healthz reports
        self.busy_since: float | None = None
        self._stream: Any = None  # the open watch response, so stop() can interrupt a quiet stream

    @property
    def name(self) -> str:
        where = self.namespace or "*"
        return f"{self.kind}.{self.api_version}@{where}" + (f"[{self.label_selector}]" if self.label_selector else "")

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> Informer:
        metrics.expose_restarts(self.kind)
        self._thread = threading.Thread(target=self.run, name=f"informer {self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the loop to stop; it notices at the next event, bookmark or stream end (and at once when idle)."""
        self._stop.set()
        self._interrupt_stream()

    def request_relist(self) -> None:
        """List again as soon as possible (e.g. Redis lost its state): every object is delivered again."""
        self._relist.set()
        self._interrupt_stream()

    def _interrupt_stream(self) -> None:
        stream = self._stream
        if stream is not None:
            try:
                stream.shutdown()
            except Exception:  # already closed, or an urllib3 without shutdown(): the stream times out instead
                log.debug("%s: could not interrupt the watch stream", self.name, exc_info=True)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # --- the loop --------------------------------------------------------------------------------------------

    def run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list or self._relist.is_set():
                    self._relist.clear()
                    self._list()
                    need_list = False
                    self.backoff.reset()
                self._watch()
                self.backoff.reset()
            except Gone:
                log.info("%s: resourceVersion %s too old (410), re-listing", self.name, self.resource_version)
                metrics.WATCH_GONE.labels(self.kind).inc()
                metrics.WATCH_RESTARTS.labels(self.kind, "gone").inc()
                need_list = True
            except ApiError as error:
                if self._stop.is_set():
                    return
                delay = self.backoff.next_delay()
                # as client-go's reflector: a watch broken by a transient error (the API server restarting, a
                # dropped connection, a 5xx) resumes from the last resourceVersion, so a blip costs no re-list of
                # every object; the server answers 410 when that version is gone, and only then is it a re-list
                resume = error.transient and not need_list and bool(self.resource_version)
                log.warning("%s: %s; %s in %.1fs", self.name, error,
                            f"watching again from {self.resource_version}" if resume else "re-listing", delay)
                metrics.WATCH_RESTARTS.labels(self.kind, "error").inc()
                need_list = not resume
                self._stop.wait(delay)
            except Exception:
                if self._stop.is_set():
                    return
                if self._relist.is_set():  # the stream was interrupted on purpose
                    need_list = True
                    continue
                delay = self.backoff.next_delay()
                log.exception("%s: unexpected failure; re-listing in %.1fs", self.name, delay)
                metrics.WATCH_RESTARTS.labels(self.kind, "error").inc()
                need_list = True
                self._stop.wait(delay)

    def _list(self) -> None:
        items: list[dict[str, Any]]
        # the annotation is explicit because KubeClient's own ``list`` method shadows the builtin in its signatures
        items, version = self.kube.list_with_version(
            self.api_version, self.kind, self.namespace, label_selector=self.label_selector)
        for obj in items:
            obj.setdefault("apiVersion", self.api_version)
            obj.setdefault("kind", self.kind)
        if self.on_list is not None:
            self.on_list(self, items)
        current: dict[tuple[str, str], dict] = {}
        for obj in items:
            if self._stop.is_set():
                return
            current[_ident(obj)] = _meta_only(obj)
            self._deliver(LISTED, obj)
        for ident, gone in list(self._seen.items()):
            if ident not in current:  # deleted while we were not watching
                self._deliver("DELETED", gone)
        self._seen = current
        self.resource_version = version
        self.synced.set()

    def _watch(self) -> None:
        started, delivered = time.monotonic(), 0
        for event in self.kube.watch(self.api_version, self.kind, self.namespace,
                                     resource_version=self.resource_version, label_selector=self.label_selector,
                                     timeout_seconds=self.watch_timeout, on_stream=self._set_stream):
            obj = event.get("object") or {}
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.resource_version = version
            kind = event.get("type")
            if kind != "BOOKMARK":
                obj.setdefault("apiVersion", self.api_version)
                obj.setdefault("kind", self.kind)
                if kind == "DELETED":
                    self._seen.pop(_ident(obj), None)
                else:
                    self._seen[_ident(obj)] = _meta_only(obj)
                self._deliver(kind or "UNKNOWN", obj)
            delivered += 1
            if self._stop.is_set():
                return
        metrics.WATCH_RESTARTS.labels(self.kind, "timeout").inc()
        if not delivered and time.monotonic() - started < 1.0:
            # a server that ends every stream at once must not turn this loop into a busy spin
            self._stop.wait(self.backoff.next_delay())

    def _set_stream(self, stream: object) -> None:
        self._stream = stream
        if self._stop.is_set():  # stop() ran between the request and now
            self.stop()
        elif self._relist.is_set():  # requested while listing, before there was a stream to interrupt
            self._interrupt_stream()

    def _deliver(self, event_type: str, obj: dict) -> None:
        if self._stop.is_set():  # a stopped informer (e.g. after losing leadership) must not enqueue anything
            return
        labelled(metrics.EVENTS, self.kind, event_type).inc()
        self.busy_since = time.monotonic()
        try:
            self.callback(event_type, obj)
        except Exception:
            metadata = obj.get("metadata") or {}
            log.exception("%s: handling %s of %s/%s failed; continuing", self.name, event_type,
                          metadata.get("namespace"), metadata.get("name"))
        finally:
            self.busy_since = None

    @property
    def alive(self) -> bool:
        """The loop's thread runs (or was never started)."""
        return self._thread is None or self._thread.is_alive()


def _ident(obj: dict) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata.get("name") or ""


def _meta_only(obj: dict) -> dict:
    """What a synthetic DELETED needs for the key mapping: names, labels and (slim) annotations."""
    metadata = obj.get("metadata") or {}
    keep = {k: metadata[k] for k in ("name", "namespace", "uid", "labels") if k in metadata}
    annotations = metadata.get("annotations")
    if annotations:
        keep["annotations"] = {k: v for k, v in annotations.items() if k not in cache_model.BULKY_ANNOTATIONS}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": keep}

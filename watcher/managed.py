"""Which kinds of managed resources to watch, learned from the handles themselves.

A handle names the resources it manages in ``spec.resources[].reference`` and ``status.resources[].reference``.
Every distinct (apiVersion, kind, namespace) referenced by at least one handle gets one informer; when the last
handle referencing it changes or goes away, its informer stops. Nothing is configured by hand, so a provider that
starts creating a new kind of resource is watched as soon as a handle records the first one.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from typing import NamedTuple

from poolboy.kube import KubeClient
from watcher import metrics
from watcher.informer import EventCallback, Informer

log = logging.getLogger(__name__)


class Target(NamedTuple):
    """One watched collection. ``namespace`` None means all namespaces (or a cluster-scoped kind)."""

    api_version: str
    kind: str
    namespace: str | None


def references(handle: dict) -> set[Target]:
    """Every (apiVersion, kind, namespace) a handle references, from its spec and its status."""
    targets: set[Target] = set()
    for section in (handle.get("spec") or {}, handle.get("status") or {}):
        for entry in section.get("resources") or []:
            reference = (entry or {}).get("reference") if isinstance(entry, dict) else None
            if not isinstance(reference, dict):
                continue
            api_version, kind = reference.get("apiVersion"), reference.get("kind")
            if api_version and kind:
                targets.add(Target(api_version, kind, reference.get("namespace") or None))
    return targets


class ManagedResources:
    """Counts the handles that reference each target and runs one informer per target in use."""

    def __init__(self, kube: KubeClient, callback: EventCallback, *, watch_timeout: int = 300,
                 informer_factory: Callable[..., Informer] = Informer) -> None:
        self.kube = kube
        self.callback = callback
        self.watch_timeout = watch_timeout
        self._factory = informer_factory
        self._by_handle: dict[tuple[str, str], set[Target]] = {}
        #: how many handles reference each target (the keys are the targets being watched)
        self._references: collections.Counter[Target] = collections.Counter()
        self._informers: dict[Target, Informer] = {}
        self._lock = threading.Lock()
        self._closed = False

    def informers(self) -> list[Informer]:
        with self._lock:
            return list(self._informers.values())

    def on_handle_event(self, event_type: str, handle: dict) -> None:
        """Update the targets of one handle (called for every handle event and listed handle): the work is in the
        size of this handle's references, not in the number of handles, so a watch event costs the same on a
        cluster of ten handles as on one of ten thousand."""
        metadata = handle.get("metadata") or {}
        ident = (metadata.get("namespace") or "", metadata.get("name") or "")
        targets = set() if event_type == "DELETED" else references(handle)
        with self._lock:
            if self._closed:  # a late event from a handle informer that is being stopped
                return
            before = self._by_handle.get(ident, set())
            if targets == before:
                return
            if targets:
                self._by_handle[ident] = targets
            else:
                self._by_handle.pop(ident, None)
            for target in targets - before:
                self._refer(target)
            for target in before - targets:
                self._unrefer(target)

    def _refer(self, target: Target) -> None:
        """One more handle references ``target``: the first starts its informer."""
        self._references[target] += 1
        if target not in self._informers:
            log.info("watching managed resources %s", target)
            self._informers[target] = self._factory(
                kube=self.kube, api_version=target.api_version, kind=target.kind, namespace=target.namespace,
                callback=self.callback, watch_timeout=self.watch_timeout,
            ).start()
            metrics.INFORMERS.labels("managed").set(len(self._informers))

    def _unrefer(self, target: Target) -> None:
        """One handle fewer references ``target``: after the last, its informer stops."""
        self._references[target] -= 1
        if self._references[target] > 0:
            return
        del self._references[target]
        informer = self._informers.pop(target, None)
        if informer is not None:
            log.info("no handle references %s any more; stop watching", target)
            informer.stop()
            metrics.INFORMERS.labels("managed").set(len(self._informers))

    @property
    def targets(self) -> set[Target]:
        with self._lock:
            return set(self._informers)

    def stop_all(self) -> None:
        with self._lock:
            self._closed = True
            self._by_handle.clear()
            self._references.clear()
            informers = list(self._informers.values())
            self._informers.clear()
            metrics.INFORMERS.labels("managed").set(0)
        for informer in informers:
            informer.stop()

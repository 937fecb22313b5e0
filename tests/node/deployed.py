"""The chart deployed for real on a node: a release's values for a registry-less node, its pods as the kubelet
reports them, and a flow of claims that keeps running while an operator changes the system under it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubernetes import client, watch

from controlplane.testing import ControlPlane
from node.images import REDIS_REPOSITORY, named
from node.launcher import Node
from tests.e2e.provider_support import config_map_provider

D, V1 = "poolboy.gpte.redhat.com", "v1"
#: the examples' operator namespace: the release goes there
NAMESPACE = "poolboy"


def node_values(node: Node, **more: Any) -> dict[str, Any]:
    """The chart's defaults, on a node that pulls nothing: its own images, and ConfigMaps to manage (the examples')."""
    values: dict[str, Any] = {
        "image": {"pullPolicy": "Never"},
        "redis": {"image": named(node.images or [], REDIS_REPOSITORY)},
        "managedResources": [{"apiGroups": [""], "resources": ["configmaps"]}],
    }
    return {**values, **more}


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return pod["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def pods(cluster: ControlPlane, namespace: str = NAMESPACE, selector: str = "") -> list[dict[str, Any]]:
    query = f"?labelSelector={selector}" if selector else ""
    return list(cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods{query}")["items"])


def all_ready(cluster: ControlPlane, namespace: str = NAMESPACE) -> bool:
    """Every pod of the namespace Running and Ready, none terminating."""
    found = pods(cluster, namespace)
    return bool(found) and all(ready(p) and not p["metadata"].get("deletionTimestamp") for p in found)


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def startup_seconds(pod: dict[str, Any]) -> float:
    """From the Pod's creation to its Ready condition: scheduling, sandbox, container start and the probes."""
    ready_at = next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready")
    return seconds(ready_at) - seconds(pod["metadata"]["creationTimestamp"])


def restarts(pod: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """Each container's restart count and the reason it last terminated ("" when it never did)."""
    found = {}
    for status in pod["status"].get("containerStatuses") or []:
        last = (status.get("lastState") or {}).get("terminated") or {}
        found[status["name"]] = (status.get("restartCount", 0), last.get("reason", ""))
    return found


@dataclass
class ClaimFlow:
    """Claims created at ``rate`` per second against a ConfigMap provider and a pool of ``pool_size``, each one's
    bind time seen from a watch; :meth:`during` names a window (an operation) whose claims' worst delay counts."""

    api: client.CustomObjectsApi
    namespace: str
    rate: float = 2.0
    pool_size: int = 5
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    handles: dict[str, str] = field(default_factory=dict)
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _watch: watch.Watch | None = None

    def install(self) -> None:
        provider = config_map_provider(self.namespace)
        self._create("resourceproviders", NAMESPACE, {"metadata": {"name": "flow"}, "spec": provider})
        self._create("resourcepools", NAMESPACE, {"metadata": {"name": "flow"}, "spec": {
            "minAvailable": self.pool_size, "provider": {"name": "flow", "parameterValues": {}}}})

    def _create(self, plural: str, namespace: str, body: dict[str, Any]) -> None:
        kind = {"resourceproviders": "ResourceProvider", "resourcepools": "ResourcePool",
                "resourceclaims": "ResourceClaim"}[plural]
        self.api.create_namespaced_custom_object(D, V1, namespace, plural,
                                                 {"apiVersion": f"{D}/{V1}", "kind": kind, **body})

    def claim(self, name: str) -> None:
        self.created[name] = time.monotonic()
        self._create("resourceclaims", self.namespace, {
            "metadata": {"name": name}, "spec": {"provider": {"name": "flow", "parameterValues": {}}}})

    def start(self) -> None:
        for target in (self._observe, self._produce):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()
        for thread in self._threads:
            thread.join(10)

    def _produce(self) -> None:
        index = 0
        while not self._stop.wait(1 / self.rate):
            name = f"flow-{index:05d}"
            index += 1
            try:
                self.claim(name)
            except client.ApiException:  # the API server is there throughout: this only records the gap
                self.created.pop(name, None)

    def _observe(self) -> None:
        while not self._stop.is_set():
            self._watch = watch.Watch()
            try:
                for event in self._watch.stream(self.api.list_namespaced_custom_object, D, V1, self.namespace,
                                                "resourceclaims", timeout_seconds=60):
                    claim = event["object"]
                    name, status = claim["metadata"]["name"], claim.get("status") or {}
                    handle = (status.get("resourceHandle") or {}).get("name")
                    if handle and name not in self.bound:
                        self.bound[name] = time.monotonic()
                        self.handles[name] = handle
            except Exception:  # a watch cut by an operation: list and watch again
                time.sleep(0.2)

    @contextmanager
    def during(self, operation: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.windows[operation] = (start, time.monotonic())

    def delays(self, operation: str) -> list[float]:
        """The bind delays of the claims created during ``operation`` (a claim still unbound counts until now)."""
        start, end = self.windows[operation]
        now = time.monotonic()
        return [self.bound.get(name, now) - at for name, at in self.created.items() if start <= at <= end]

    def unbound(self) -> list[str]:
        return sorted(name for name in self.created if name not in self.bound)

"""The chart deployed for real on a node: a release's values for a registry-less node, its pods as the kubelet
reports them, and a flow of claims that keeps running while an operator changes the system under it."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from controlplane.testing import ControlPlane
from node.launcher import Node
from stack.deployed import chart_values
from tests.e2e.burst import Burst
from tests.waiting import wait_for

D, V1 = "poolboy.gpte.redhat.com", "v1"
#: the examples' operator namespace: the release goes there
NAMESPACE = "poolboy"


def node_values(node: Node, **more: Any) -> dict[str, Any]:
    """The chart's defaults on a node that pulls nothing, managing ConfigMaps (the examples' and the flow's)."""
    return chart_values(node, [{"apiGroups": [""], "resources": ["configmaps"]}], **more)


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
    """Claims of ``burst`` (a ConfigMap provider and its pool) created at ``rate`` per second in the background, and
    any number at once with :meth:`claim_many`; each one's bind time seen from a watch. :meth:`during` names a
    window (an operation) whose claims' worst bind delay :meth:`delays` reports."""

    burst: Burst
    rate: float = 1.0
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    _next: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def claim(self) -> str:
        with self._lock:
            index = next(self._next)
        name = f"c{index:03d}"
        self.created[name] = time.monotonic()
        self.burst.claim(index)
        return name

    def claim_many(self, count: int) -> list[str]:
        return [self.claim() for _ in range(count)]

    def start(self) -> None:
        for target in (self._observe, self._produce):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(70)

    def _produce(self) -> None:
        while not self._stop.wait(1 / self.rate):
            self.claim()

    def _observe(self) -> None:
        api = self.burst.api
        while not self._stop.is_set():
            try:
                for event in watch.Watch().stream(api.list_namespaced_custom_object, D, V1, self.burst.namespace,
                                                  "resourceclaims", timeout_seconds=5):
                    claim = event["object"]
                    if (claim.get("status") or {}).get("resourceHandle"):
                        self.bound.setdefault(claim["metadata"]["name"], time.monotonic())
            except Exception:  # a watch cut by an operation: list and watch again
                self._stop.wait(0.2)

    def wait_bound(self, names: list[str], timeout: float) -> float:
        """Until every one of ``names`` is bound; returns the seconds from the first's creation to the last bind."""
        wait_for(lambda: all(name in self.bound for name in names), timeout=timeout, interval=0.1,
                 message=f"{len(names)} claims bound ({sum(n in self.bound for n in names)} so far)")
        return max(self.bound[n] for n in names) - min(self.created[n] for n in names)

    @contextmanager
    def during(self, operation: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.windows[operation] = (start, time.monotonic())

    def worst_delay(self, operation: str) -> float:
        """The longest bind delay of the claims created during ``operation`` (one still unbound counts till now)."""
        start, end = self.windows[operation]
        now = time.monotonic()
        return max((self.bound.get(name, now) - at for name, at in self.created.items() if start <= at <= end),
                   default=0.0)

    def unbound(self) -> list[str]:
        return sorted(name for name in self.created if name not in self.bound)


def deployments(cluster: ControlPlane, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    return list(cluster.request("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments")["items"])


def not_rolled_out(cluster: ControlPlane, namespace: str = NAMESPACE) -> list[str]:
    """What keeps the release from being rolled out: a Deployment not at its wanted replicas, all of the current
    revision and available, or a pod not Ready (or left terminating). Empty once rolled out."""
    waiting = []
    for deployment in deployments(cluster, namespace):
        spec, status = deployment["spec"], deployment.get("status") or {}
        wanted = spec.get("replicas", 1)
        counts = {key: status.get(key, 0) for key in ("replicas", "updatedReplicas", "availableReplicas")}
        if status.get("observedGeneration") != deployment["metadata"]["generation"] or any(
                count != wanted for count in counts.values()):
            waiting.append(f"{deployment['metadata']['name']} wants {wanted}: {counts}")
    waiting += [f"pod {p['metadata']['name']} {p['status'].get('phase')}"
                f"{' terminating' if p['metadata'].get('deletionTimestamp') else ''}"
                for p in pods(cluster, namespace) if not ready(p) or p["metadata"].get("deletionTimestamp")]
    return waiting


def rolled_out(cluster: ControlPlane, namespace: str = NAMESPACE) -> bool:
    return not not_rolled_out(cluster, namespace)


def settle(cluster: ControlPlane, timeout: float = 240) -> None:
    """Until the release is rolled out; fails saying what still keeps it from being so."""
    try:
        wait_for(lambda: rolled_out(cluster), timeout=timeout, interval=0.5, message="the release rolled out")
    except AssertionError as error:
        raise AssertionError(f"{error}: {not_rolled_out(cluster)}") from None


def scale(cluster: ControlPlane, deployment: str, replicas: int, namespace: str = NAMESPACE) -> None:
    """``kubectl scale``: the Deployment's scale subresource."""
    cluster.request("PATCH", f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}/scale",
                    {"spec": {"replicas": replicas}})


def save_logs(cluster: ControlPlane, directory: Path, namespace: str = NAMESPACE) -> Path:
    """Each pod's container logs (and its previous container's, when it restarted) as ``<pod>.log`` files in
    ``directory``: what :func:`tests.e2e.burst.wait_settled` searches for the objects still wrong."""
    directory.mkdir(parents=True, exist_ok=True)
    core = client.CoreV1Api(cluster.api_client())
    for pod in pods(cluster, namespace):
        name = pod["metadata"]["name"]
        text = ""
        for previous in (True, False):
            with contextlib.suppress(client.ApiException):  # 400: no previous container
                text += core.read_namespaced_pod_log(name, namespace, previous=previous)
        (directory / f"{name}.log").write_text(text)
    return directory


def warnings(cluster: ControlPlane, reason: str, namespace: str = NAMESPACE) -> list[str]:
    """The namespace's Events of ``reason`` (Unhealthy, OOMKilling, BackOff, ...): what the kubelet complained of."""
    events = cluster.request("GET", f"/api/v1/namespaces/{namespace}/events")["items"]
    return [f"{e['involvedObject']['name']}: {e['message']}" for e in events if e.get("reason") == reason]

"""Leader election on a ``coordination.k8s.io/v1`` Lease, so two watcher replicas never both enqueue.

The same protocol as client-go's leaderelection: the holder renews ``spec.renewTime`` every ``retry_period``; every
write is a PUT carrying the resourceVersion just read, so two candidates cannot both win. A candidate decides
that the lease expired from its *own* monotonic clock: the record (holder, renewTime) has not changed for
``lease_seconds`` since it first observed it. That makes expiry independent of clock skew between machines.
A leader that cannot renew for ``renew_deadline`` steps down before anyone else may take over.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from poolboy.kube import AlreadyExists, ApiError, Conflict, KubeClient, NotFound

log = logging.getLogger(__name__)

LEASE_API = "coordination.k8s.io/v1"


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, kube: KubeClient, namespace: str, name: str, identity: str, *, lease_seconds: float = 15.0,
                 on_started: Callable[[], None], on_stopped: Callable[[], None]) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_seconds = max(1.0, float(lease_seconds))
        self.renew_deadline = self.lease_seconds * 2 / 3
        self.retry_period = self.lease_seconds / 5
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.is_leader = False
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._taken_over = False  # the last read showed another, unexpired holder
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Campaign and renew until :meth:`stop`; on the way out step down and release the lease."""
        try:
            while not self._stop.is_set():
                try:
                    held = self._try_acquire_or_renew()
                except ApiError as error:
                    log.warning("lease %s/%s: %s", self.namespace, self.name, error)
                    held = False
                now = time.monotonic()
                if held:
                    self._last_renew = now
                    if not self.is_leader:
                        self._become(True)
                elif self.is_leader and (self._taken_over or now - self._last_renew > self.renew_deadline):
                    log.warning("lease %s/%s: %s, stepping down", self.namespace, self.name,
                                "another watcher holds it" if self._taken_over else
                                f"could not renew for {now - self._last_renew:.1f}s")
                    self._become(False)
                self._stop.wait(self.retry_period)
        finally:
            if self.is_leader:
                self._become(False)
                self._release()

    def _become(self, leader: bool) -> None:
        self.is_leader = leader
        log.info("%s %s leadership of %s/%s", self.identity, "acquired" if leader else "lost",
                 self.namespace, self.name)
        (self.on_started if leader else self.on_stopped)()

    def _try_acquire_or_renew(self) -> bool:
        self._taken_over = False
        lease = self.kube.get_or_none(LEASE_API, "Lease", self.name, self.namespace)
        now = _micro_time()
        if lease is None:
            try:
                self.kube.create(self._lease_body({}, now, transitions=0, acquire_time=now))
            except AlreadyExists:
                return False
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime") or "")
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self.lease_seconds)
        expired = time.monotonic() - self._observed_at >= duration
        if holder and holder != self.identity and not expired:
            self._taken_over = True
            return False
        if holder == self.identity:
            body = self._lease_body(lease, now, transitions=spec.get("leaseTransitions") or 0,
                                    acquire_time=spec.get("acquireTime") or now)
        else:
            body = self._lease_body(lease, now, transitions=(spec.get("leaseTransitions") or 0) + 1,
                                    acquire_time=now)
        try:
            updated = self.kube.replace(body)
        except (Conflict, NotFound):
            return False
        new_spec = updated.get("spec") or {}
        self._observed = (new_spec.get("holderIdentity") or "", new_spec.get("renewTime") or "")
        self._observed_at = time.monotonic()
        return True

    def _lease_body(self, lease: dict, now: str, *, transitions: int, acquire_time: str) -> dict:
        metadata = dict(lease.get("metadata") or {"name": self.name, "namespace": self.namespace})
        return {
            "apiVersion": LEASE_API, "kind": "Lease", "metadata": metadata,
            "spec": {
                "holderIdentity": self.identity, "leaseDurationSeconds": max(1, round(self.lease_seconds)),
                "acquireTime": acquire_time, "renewTime": now, "leaseTransitions": transitions,
            },
        }

    def _release(self) -> None:
        """Give the lease up on a clean shutdown, so a standby takes over at once instead of after expiry."""
        try:
            lease = self.kube.get_or_none(LEASE_API, "Lease", self.name, self.namespace)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1,
                             "renewTime": _micro_time()}
            self.kube.replace(lease)
        except ApiError as error:
            log.info("lease %s/%s: release failed (%s); it will expire", self.namespace, self.name, error)

"""Leader election on a ``coordination.k8s.io/v1`` Lease, so two watcher replicas never both enqueue.

The same protocol as client-go's leaderelection: the holder renews ``spec.renewTime`` every ``retry_period``; every
write is a PUT carrying the resourceVersion just read, so two candidates cannot both win. A candidate decides
that the lease expired from its *own* monotonic clock: the record (holder, renewTime) has not changed for
``leaseDurationSeconds`` since it first observed it. That makes expiry independent of clock skew between machines.
A leader that cannot renew for ``renew_deadline`` (shorter than the lease) steps down before anyone else may take
over, even while a renew request hangs.

``POOLBOY_WATCHER_LEASE_SECONDS`` is the promise "a standby takes over within this long after the leader dies"
(:class:`LeaseTiming`), so the Lease's own ``leaseDurationSeconds`` is shorter than it: a standby only notices the
dead leader's last renewal at its next poll and the expiry at a later one, and both delays count against the promise.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from poolboy.kube import AlreadyExists, ApiError, Conflict, KubeClient, NotFound

log = logging.getLogger(__name__)

LEASE_API = "coordination.k8s.io/v1"


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseTiming:
    """The three periods of an election, derived from the takeover promise.

    After the leader's last renewal (at or before its death) a standby sees the new record within one poll
    (``retry_period``), waits ``lease_duration`` on its own clock, and notices the expiry within one more poll: a
    takeover at most ``lease_duration + 2 * retry_period`` (plus request latencies) after the death. With
    ``retry_period = S/10`` and ``lease_duration = floor(0.7 S)`` that is at most 0.9 S, leaving 0.1 S (1.5 s for
    the default 15 s) for the requests themselves. ``renew_deadline`` keeps client-go's 2/3 of the lease, so the
    leader steps down a third of the lease before a standby could take over.
    """

    retry_period: float
    lease_duration: int
    renew_deadline: float

    @classmethod
    def for_takeover_within(cls, seconds: float) -> LeaseTiming:
        seconds = max(1.0, float(seconds))
        retry_period = seconds / 10
        lease_duration = max(1, math.floor(seconds - 3 * retry_period + 1e-9))
        return cls(retry_period=retry_period, lease_duration=lease_duration, renew_deadline=lease_duration * 2 / 3)


class LeaderElector:
    def __init__(self, kube: KubeClient, namespace: str, name: str, identity: str, *, lease_seconds: float = 15.0,
                 on_started: Callable[[], None], on_stopped: Callable[[], None]) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timing = LeaseTiming.for_takeover_within(lease_seconds)
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.is_leader = False
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0  # monotonic time at which the last successful renew request *began*
        self._taken_over = False  # the last read showed another, unexpired holder
        #: monotonic time of the campaign loop's last pass, for the watcher's /healthz
        self.last_pass: float | None = None
        self._lock = threading.Lock()  # leadership changes come from the campaign loop and the deadline watchdog
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Campaign and renew until :meth:`stop`; on the way out step down and release the lease."""
        watchdog = threading.Thread(target=self._enforce_renew_deadline, name=f"lease-deadline-{self.name}",
                                    daemon=True)
        watchdog.start()
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    held = self._try_acquire_or_renew()
                except ApiError as error:
                    log.warning("lease %s/%s: %s", self.namespace, self.name, error)
                    held = False
                self._after_attempt(held, started)
                self.last_pass = time.monotonic()
                self._stop.wait(self.timing.retry_period)
        finally:
            self._stop.set()
            watchdog.join()
            with self._lock:
                if self.is_leader:
                    self._become(False)
                    self._release()

    def _after_attempt(self, held: bool, started: float) -> None:
        """Lead on a renewal, unless the request took so long that the renew deadline, counted from when it
        began (the standby cannot have seen the new record earlier), already passed."""
        with self._lock:
            if held and time.monotonic() - started < self.timing.renew_deadline:
                self._last_renew = started
                if not self.is_leader:
                    self._become(True)
            elif self.is_leader and self._taken_over:
                log.warning("lease %s/%s: another watcher holds it, stepping down", self.namespace, self.name)
                self._become(False)

    def _enforce_renew_deadline(self) -> None:
        """Step down once ``renew_deadline`` has passed without a renewal, on a thread of its own: a hanging renew
        request can last the whole API timeout (30 s by default), longer than the lease, and must not keep this
        watcher enqueuing after a standby may have taken over."""
        while not self._stop.is_set():
            with self._lock:
                overdue = time.monotonic() - self._last_renew - self.timing.renew_deadline
                if self.is_leader and overdue >= 0:
                    log.warning("lease %s/%s: could not renew for %.1fs, stepping down", self.namespace, self.name,
                                self.timing.renew_deadline + overdue)
                    self._become(False)
                wait = min(self.timing.retry_period, -overdue) if self.is_leader else self.timing.retry_period
            self._stop.wait(wait)

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
        duration = float(spec.get("leaseDurationSeconds") or self.timing.lease_duration)
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
                "holderIdentity": self.identity, "leaseDurationSeconds": self.timing.lease_duration,
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

"""A stand-in for the controller of an expensive kind (a virtual machine, a lab), for tests and benchmarks of pools
with standby and reuse: ``Machine`` objects (``standin.poolboy.test/v1``) whose own controller is this thread.

A Machine's ``spec.running`` (true when absent) says whether it should run; the controller makes ``status.ready``
true ``boot_seconds`` after it is asked to run (``resume_seconds`` when it has run before: a stopped virtual machine
resumes from its disk faster than a new one is provisioned), and ``status.phase`` ``Stopped`` ``stop_seconds`` after it
is asked to stop; while it starts or stops it is not ready. A janitor
wipes it: a ``spec.wipeRequest`` that differs from ``status.wiped`` is copied there ``wipe_seconds`` later, unless
the Machine is labelled ``standin.poolboy.test/stuck`` (a janitor that never finishes); one labelled
``standin.poolboy.test/stuck-stopped`` never becomes ready again once stopped (a resume that never completes). The
controller adds up the
time Machines spend starting or running (:meth:`StandInController.running_seconds`): the benchmark's running
handle-hours; and it counts the Machines it has seen (:meth:`StandInController.machines_seen`): handles provisioned.

The controller polls (a list every ``interval`` seconds) with the official client, as the cluster's administrator:
it only has to be simple and independent of Poolboy.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

log = logging.getLogger(__name__)

GROUP = "standin.poolboy.test"
VERSION = "v1"
PLURAL = "machines"
KIND = "Machine"
API_VERSION = f"{GROUP}/{VERSION}"
STUCK_LABEL = f"{GROUP}/stuck"
#: a Machine labelled so never boots again once stopped: it stays ``Starting`` (a resume that never completes)
STUCK_STOPPED_LABEL = f"{GROUP}/stuck-stopped"
#: a provider's readiness (and so resumed) check of a Machine
READY_CHECK = "status is defined and status.ready | default(false)"
#: a provider's standby patch: stop the Machine
STANDBY_PATCH: dict[str, Any] = {"spec": {"running": False}}
#: a provider's cleanup patch, rendered once per release, so each cleaning asks the janitor for a wipe of its own
WIPE_PATCH: dict[str, Any] = {"spec": {"wipeRequest": "{{ now(true) }}"}}
#: clean once the janitor has done the wipe asked for
WIPED_CHECK = "status is defined and status.wiped is defined and status.wiped == spec.wipeRequest"

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"kind": KIND, "plural": PLURAL, "singular": "machine", "listKind": f"{KIND}List"},
             "versions": [{"name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}

#: the chart's ``managedResources`` entry that lets Poolboy manage Machines (``LocalStack.grant``)
GRANT: dict[str, Any] = {"apiGroups": [GROUP], "resources": [PLURAL]}


def machine_of(custom: client.CustomObjectsApi, handle: dict[str, Any]) -> dict[str, Any] | None:
    """The Machine a handle's first resource names, as the API server has it now; None before it is made or once
    it is gone."""
    reference = (((handle.get("status") or {}).get("resources") or [{}])[0]).get("reference") or {}
    if not reference.get("name"):
        return None
    try:
        found: dict[str, Any] = custom.get_namespaced_custom_object(GROUP, VERSION, reference["namespace"], PLURAL,
                                                                    reference["name"])
        return found
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def install_crd(api_client: client.ApiClient, timeout: float = 30) -> None:
    """Create the Machine CRD (once) and wait until the API server serves it."""
    extensions = client.ApiextensionsV1Api(api_client)
    try:
        extensions.create_custom_resource_definition(CRD)  # type: ignore[arg-type]  # a dict body is sent as is
    except ApiException as error:
        if error.status != 409:
            raise
    custom = client.CustomObjectsApi(api_client)
    deadline = time.monotonic() + timeout
    while True:
        try:
            custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=1)
            return
        except ApiException as error:
            if error.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@dataclass
class _Seen:
    """What the controller remembers of one Machine: since when it has wanted its current ``running``, whether it
    has run before (it then resumes rather than boots), and the wipe it is doing."""

    wants_running: bool
    since: float
    booted: bool = False
    stopped: bool = False
    wipe_request: Any = None
    wipe_since: float = 0.0


@dataclass
class StandInController:
    """Runs Machines (see the module docstring) until stopped; ``with controller.running(): ...``."""

    api_client: client.ApiClient
    boot_seconds: float = 1.0
    #: how long a Machine that has run before takes to run again; None: ``boot_seconds``
    resume_seconds: float | None = None
    stop_seconds: float = 0.2
    wipe_seconds: float = 0.5
    interval: float = 0.1
    #: by the Machine's uid, so that a Machine deleted and made again under its name is a new one
    seen: dict[str, _Seen] = field(default_factory=dict)
    _running_seconds: float = 0.0
    _last_poll: float | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    @contextmanager
    def running(self) -> Iterator[StandInController]:
        thread = threading.Thread(target=self._loop, name="standin-controller", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=10)

    def running_seconds(self) -> float:
        """Machine-seconds spent starting or running so far: each poll adds the time since the previous one for
        every Machine it finds starting or running."""
        return self._running_seconds

    def machines_seen(self) -> int:
        """How many Machines (by uid) the controller has seen so far: the handles provisioned."""
        return len(self.seen)

    def _loop(self) -> None:
        custom = client.CustomObjectsApi(self.api_client)
        while not self._stop.wait(self.interval):
            try:
                self._poll(custom)
            except Exception as error:  # the API server restarts in chaos runs, a connection drops: poll again
                log.warning("stand-in controller: %r; polling again", error)

    def _poll(self, custom: client.CustomObjectsApi) -> None:
        listed: Any = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        machines = listed["items"]
        now = time.monotonic()
        elapsed = 0.0 if self._last_poll is None else now - self._last_poll
        self._last_poll = now
        for machine in machines:
            phase = self._phase(machine, now)
            if phase in ("Starting", "Running"):
                self._running_seconds += elapsed
            try:
                self._reconcile(custom, machine, phase)
            except ApiException:
                continue  # a conflict or a deletion meanwhile: the next poll sees the new state

    def _phase(self, machine: dict[str, Any], now: float) -> str:
        """Where the Machine is now (Starting, Running, Stopping, Stopped), from what it has wanted since when."""
        wants = (machine.get("spec") or {}).get("running", True) is not False
        seen = self.seen.get(machine["metadata"]["uid"])
        if seen is None:
            seen = self.seen[machine["metadata"]["uid"]] = _Seen(wants, now)
        elif seen.wants_running != wants:
            seen.wants_running, seen.since = wants, now
        if wants:
            delay = self.boot_seconds
            if seen.booted and self.resume_seconds is not None:
                delay = self.resume_seconds
            never = seen.stopped and STUCK_STOPPED_LABEL in (machine["metadata"].get("labels") or {})
            if now - seen.since < delay or never:
                return "Starting"
            seen.booted = True
            return "Running"
        if now - seen.since < self.stop_seconds:
            return "Stopping"
        seen.stopped = True
        return "Stopped"

    def _reconcile(self, custom: client.CustomObjectsApi, machine: dict[str, Any], phase: str) -> None:
        metadata, spec = machine["metadata"], machine.get("spec") or {}
        status = dict(machine.get("status") or {})
        seen = self.seen[metadata["uid"]]
        now = time.monotonic()
        new = {**status, "phase": phase, "ready": phase == "Running"}
        request = spec.get("wipeRequest")
        if request is not None and request != status.get("wiped"):
            if seen.wipe_request != request:
                seen.wipe_request, seen.wipe_since = request, now
            stuck = STUCK_LABEL in (metadata.get("labels") or {})
            if not stuck and now - seen.wipe_since >= self.wipe_seconds:
                new["wiped"] = request
        if new != status:
            custom.patch_namespaced_custom_object_status(GROUP, VERSION, metadata["namespace"], PLURAL,
                                                         metadata["name"], {"status": new})


def provider_spec(namespace: str, **extra: Any) -> dict[str, Any]:
    """A ResourceProvider's spec of Machines in ``namespace``, ready once their controller says so; ``extra`` adds
    e.g. its ``standby`` (:data:`STANDBY_PATCH`) or ``reuse`` (:data:`WIPE_PATCH`, :data:`WIPED_CHECK`)."""
    return {"override": {"metadata": {"name": "m-{{ guid }}"}},
            "template": {"enable": True, "definition": {"apiVersion": API_VERSION, "kind": KIND,
                                                        "metadata": {"namespace": namespace},
                                                        "spec": {"size": "small"}}},
            "healthCheck": "true", "readinessCheck": READY_CHECK, **extra}

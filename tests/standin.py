"""A stand-in for the controller of an expensive kind (a virtual machine, a lab), for tests and benchmarks of pools
with standby and reuse: ``Machine`` objects (``standin.poolboy.test/v1``) whose own controller is this thread.

A Machine's ``spec.running`` (true when absent) says whether it should run; the controller makes ``status.ready``
true ``boot_seconds`` after it is asked to run, and false ``stop_seconds`` after it is asked to stop. A janitor
wipes it: a ``spec.wipeRequest`` that differs from ``status.wiped`` is copied there ``wipe_seconds`` later, unless
the Machine is labelled ``standin.poolboy.test/stuck`` (a janitor that never finishes); one labelled
``standin.poolboy.test/stuck-stopped`` never becomes ready again once stopped (a resume that never completes). The
controller adds up the time Machines spend starting or running (:meth:`StandInController.running_seconds`): the
benchmark's running handle-hours.

The controller polls (a list every ``interval`` seconds) with the official client, as the cluster's administrator:
it only has to be simple and independent of Poolboy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

GROUP = "standin.poolboy.test"
VERSION = "v1"
PLURAL = "machines"
KIND = "Machine"
API_VERSION = f"{GROUP}/{VERSION}"
STUCK_LABEL = f"{GROUP}/stuck"
#: a Machine labelled so never boots again once stopped: it stays ``Starting`` (a resume that never completes)
STUCK_STOPPED_LABEL = f"{GROUP}/stuck-stopped"

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
    """What the controller remembers of one Machine: since when it has wanted its current ``running``, and when it
    started running (for ``status.runningSeconds``)."""

    wants_running: bool
    since: float
    wipe_request: Any = None
    wipe_since: float = 0.0


@dataclass
class StandInController:
    """Runs Machines (see the module docstring) until stopped; ``with controller.running(): ...``."""

    api_client: client.ApiClient
    boot_seconds: float = 1.0
    stop_seconds: float = 0.2
    wipe_seconds: float = 0.5
    interval: float = 0.1
    seen: dict[tuple[str, str], _Seen] = field(default_factory=dict)
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
        """Machine-seconds spent starting or running so far, as the polls saw them."""
        return self._running_seconds

    def _loop(self) -> None:
        custom = client.CustomObjectsApi(self.api_client)
        while not self._stop.wait(self.interval):
            try:
                listed: Any = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
                machines = listed["items"]
            except (ApiException, OSError):
                continue  # the API server restarts in chaos runs: poll again
            now = time.monotonic()
            elapsed = 0.0 if self._last_poll is None else now - self._last_poll
            self._last_poll = now
            for machine in machines:
                if (machine.get("status") or {}).get("phase") in ("Starting", "Running"):
                    self._running_seconds += elapsed
                try:
                    self._reconcile(custom, machine, now)
                except ApiException:
                    continue  # a conflict or a deletion meanwhile: the next poll sees the new state

    def _reconcile(self, custom: client.CustomObjectsApi, machine: dict[str, Any], now: float) -> None:
        metadata, spec = machine["metadata"], machine.get("spec") or {}
        status = dict(machine.get("status") or {})
        key = (metadata["namespace"], metadata["name"])
        wants = spec.get("running", True) is not False
        seen = self.seen.get(key)
        if seen is None or seen.wants_running != wants:
            seen = self.seen[key] = _Seen(wants, now, seen.wipe_request if seen else None,
                                          seen.wipe_since if seen else 0.0)
        new = dict(status)
        delay = self.boot_seconds if wants else self.stop_seconds
        never_boots = wants and STUCK_STOPPED_LABEL in (metadata.get("labels") or {}) \
            and status.get("phase") in ("Stopped", "Starting")
        if now - seen.since >= delay and not never_boots:
            new["ready"] = wants
            new["phase"] = "Running" if wants else "Stopped"
        else:
            new.setdefault("ready", False)
            new["phase"] = "Starting" if wants else "Stopping"
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

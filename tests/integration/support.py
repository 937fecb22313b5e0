"""What the claim-side and handle-side integration tests share: a per-test world on the session devcluster.

Both families need their own operator and user namespaces, a real ``KubeClient`` and a
:class:`tests.converge.Converger` driving the domain reconcilers directly. The families' factories and "driving"
helpers differ in signature (claim tests name claims, handle tests name a kind and an object), so those stay in
``claim_support`` (:class:`ClaimEnv`) and ``handle_support`` (:class:`HandleEnv`); what is the same logic
lives here once.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

from poolboy import keys
from poolboy.context import utcnow
from poolboy.kube import KubeClient, event_recorder
from poolboy.result import PermanentError, Result
from poolboy.settings import Settings
from tests.converge import Converger, api_context

Outcome = Result | PermanentError
EnvT = TypeVar("EnvT", bound="KubeEnv")


class KubeEnv:
    """One test's world: namespaces, client, converger, and the helpers both test families use."""

    def __init__(self, kube: KubeClient, settings: Settings, user_namespace: str) -> None:
        self.kube = kube
        self.settings = settings
        self.d = settings.domain
        self.api = settings.api_version
        self.op = settings.operator_namespace
        self.ns = user_namespace
        self.converger = Converger(kube, settings)

    # --- factories -------------------------------------------------------------------------------------------

    def provider_ref(self, name: str) -> dict[str, str]:
        return {"apiVersion": self.api, "kind": "ResourceProvider", "name": name, "namespace": self.op}

    def handle(self, name: str, spec: dict[str, Any], labels: dict[str, str] | None = None,
               finalizers: list[str] | None = None) -> dict[str, Any]:
        """A handle in the operator namespace, with Poolboy's finalizer unless ``finalizers`` says otherwise."""
        return self.kube.create({"apiVersion": self.api, "kind": "ResourceHandle",
                                 "metadata": {"name": name, "namespace": self.op, "labels": labels or {},
                                              "finalizers": [self.d] if finalizers is None else finalizers},
                                 "spec": spec})

    # --- reads -----------------------------------------------------------------------------------------------

    def get_handle(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none(self.api, "ResourceHandle", name, self.op)

    def handles(self, **labels: str) -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in labels.items()) or None
        return self.kube.list(self.api, "ResourceHandle", self.op, label_selector=selector)

    def events_in(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """Events in ``namespace`` about the object called ``name``, once every Event emitted so far is sent
        (reconcilers emit them without waiting)."""
        assert event_recorder.flush(10), "queued Events not sent within 10 s"
        return [e for e in self.kube.list("v1", "Event", namespace)
                if (e.get("involvedObject") or {}).get("name") == name]

    # --- driving ---------------------------------------------------------------------------------------------

    def key_of(self, kind: str, name: str) -> str:
        """The work key: claims live in the user namespace, every other kind in the operator namespace."""
        return keys.make(kind, self.ns if kind == keys.CLAIM else self.op, name)

    def converge_key(self, key: str, now: datetime | None = None) -> list[tuple[str, Outcome]]:
        """Reconcile ``key`` and its follow-ups until quiescent, with the clock pinned to ``now`` if given."""
        if now is not None:
            self.converger.clock = lambda: now
        try:
            return self.converger.run(key)
        finally:
            self.converger.clock = utcnow

    def reconcile_once(self, kind: str, name: str, now: datetime | None = None) -> Outcome:
        """One reconcile, no follow-ups, e.g. to observe an intermediate state."""
        from poolboy.reconcilers import RECONCILERS

        ctx = api_context(self.kube, self.settings, now=now or utcnow())
        try:
            return RECONCILERS[kind](ctx, self.ns if kind == keys.CLAIM else self.op, name)
        except PermanentError as error:
            return error

    def last_outcome(self, log: list[tuple[str, Outcome]], kind: str, name: str) -> Outcome:
        outcomes = [o for k, o in log if k == self.key_of(kind, name)]
        assert outcomes, f"{kind} {name} was not reconciled"
        return outcomes[-1]


def open_env(devcluster, env_class: type[EnvT], prefix: str = "", **settings: Any) -> Iterator[EnvT]:
    """Fixture body: fresh ``<prefix>op-<x>`` and ``<prefix>user-<x>`` namespaces, then the env; the client is
    closed at teardown. ``settings`` override :meth:`Settings.from_env` (``api_timeout`` defaults to 10 s)."""
    suffix = uuid.uuid4().hex[:8]
    settings = {"api_timeout": 10.0, **settings}
    config = Settings.from_env(operator_namespace=f"{prefix}op-{suffix}", **settings)
    kube = KubeClient.from_settings(config, kubeconfig=str(devcluster.kubeconfig))
    user_namespace = f"{prefix}user-{suffix}"
    for name in (config.operator_namespace, user_namespace):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield env_class(kube, config, user_namespace)
    kube.close()


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class PausedCall:
    """An API client whose first call of ``method`` waits until released: the client of a run whose lease a Redis
    loss ended, going on while another worker runs the same key."""

    def __init__(self, client: object, method: str) -> None:
        self._client, self._method = client, method
        self.reached = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name != self._method:
            return attribute

        def paused(*args: Any, **kwargs: Any) -> Any:
            if not self.reached.is_set():
                self.reached.set()
                assert self.release.wait(30), "the paused run was never released"
            return attribute(*args, **kwargs)

        return paused


def run_beside(first: Callable[[], object], paused: PausedCall, second: Callable[[], object]) -> None:
    """Run ``first`` until it reaches ``paused``'s call, ``second`` from start to end, then the rest of ``first``."""
    thread = threading.Thread(target=first)
    thread.start()
    assert paused.reached.wait(30), "the first run never got to the paused call"
    try:
        second()
    finally:
        paused.release.set()
        thread.join(30)
    assert not thread.is_alive(), "the first run did not finish"


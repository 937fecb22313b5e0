"""Shared fixture and helpers for handle, pool, scaling and provider integration tests (no tests of its own).

Each test gets its own operator namespace and user namespace on the session devcluster, a real ``KubeClient``
and a :class:`tests.converge.Converger`. Handles are created directly (as a pool or a claim would) so the
handle side is tested without depending on the claim reconciler.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from poolboy import keys
from poolboy.context import Context, utcnow
from poolboy.kube import KubeClient
from poolboy.result import PermanentError, Result
from poolboy.settings import Settings
from tests.converge import Converger

Outcome = Result | PermanentError


class HandleEnv:
    def __init__(self, kube: KubeClient, settings: Settings, user_namespace: str) -> None:
        self.kube = kube
        self.settings = settings
        self.d = settings.domain
        self.api = settings.api_version
        self.op = settings.operator_namespace
        self.ns = user_namespace
        self.converger = Converger(kube, settings)

    # --- factories -----------------------------------------------------------------------------------------

    def provider(self, name: str, **spec: Any) -> dict[str, Any]:
        return self.kube.create({"apiVersion": self.api, "kind": "ResourceProvider",
                                 "metadata": {"name": name, "namespace": self.op}, "spec": spec})

    def configmap_provider(self, name: str, **spec: Any) -> dict[str, Any]:
        base: dict[str, Any] = {"override": {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"namespace": self.ns}}}
        base.update(spec)
        return self.provider(name, **base)

    def provider_ref(self, name: str) -> dict[str, str]:
        return {"apiVersion": self.api, "kind": "ResourceProvider", "name": name, "namespace": self.op}

    def handle(self, name: str, spec: dict[str, Any], labels: dict[str, str] | None = None,
               finalizers: list[str] | None = None) -> dict[str, Any]:
        return self.kube.create({"apiVersion": self.api, "kind": "ResourceHandle",
                                 "metadata": {"name": name, "namespace": self.op, "labels": labels or {},
                                              "finalizers": [self.d] if finalizers is None else finalizers},
                                 "spec": spec})

    def resources_handle(self, name: str, provider: str, template: dict[str, Any] | None = None,
                         **spec: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"provider": self.provider_ref(provider)}
        if template is not None:
            entry["template"] = template
        return self.handle(name, {"resources": [entry], **spec})

    def claim(self, name: str, spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
        return self.kube.create({"apiVersion": self.api, "kind": "ResourceClaim",
                                 "metadata": {"name": name, "namespace": self.ns, **metadata},
                                 "spec": spec or {"resources": []}})

    def claim_ref(self, name: str) -> dict[str, str]:
        return {"apiVersion": self.api, "kind": "ResourceClaim", "name": name, "namespace": self.ns}

    def bound_labels(self, claim: str) -> dict[str, str]:
        return {f"{self.d}/resource-claim-name": claim, f"{self.d}/resource-claim-namespace": self.ns}

    def pool(self, name: str, **spec: Any) -> dict[str, Any]:
        return self.kube.create({"apiVersion": self.api, "kind": "ResourcePool",
                                 "metadata": {"name": name, "namespace": self.op}, "spec": spec})

    def scaling(self, name: str, pool: str, count: int, at: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"resourcePool": {"name": pool}, "count": count}
        if at:
            spec["at"] = at
        return self.kube.create({"apiVersion": self.api, "kind": "ResourcePoolScaling",
                                 "metadata": {"name": name, "namespace": self.op}, "spec": spec})

    # --- reads ---------------------------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        api = "v1" if kind in ("ConfigMap", "Secret", "Namespace") else self.api
        return self.kube.get_or_none(api, kind, name, namespace or (self.ns if api == "v1" else self.op))

    def get_handle(self, name: str) -> dict[str, Any] | None:
        return self.get("ResourceHandle", name)

    def configmap(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none("v1", "ConfigMap", name, self.ns)

    def handles(self, **labels: str) -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in labels.items()) or None
        return self.kube.list(self.api, "ResourceHandle", self.op, label_selector=selector)

    def pool_handles(self, pool: str) -> list[dict[str, Any]]:
        return [h for h in self.kube.list(self.api, "ResourceHandle", self.op,
                                          label_selector=f"{self.d}/resource-pool-name={pool}")
                if not h["metadata"].get("deletionTimestamp")]

    def events(self, name: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.kube.list("v1", "Event", namespace or self.op)
                if (e.get("involvedObject") or {}).get("name") == name]

    # --- driving -------------------------------------------------------------------------------------------

    def key(self, kind: str, name: str) -> str:
        return keys.make(kind, self.ns if kind == keys.CLAIM else self.op, name)

    def converge(self, kind: str, name: str, now: datetime | None = None) -> list[tuple[str, Outcome]]:
        if now is not None:
            self.converger.clock = lambda: now
        try:
            return self.converger.run(self.key(kind, name))
        finally:
            self.converger.clock = utcnow

    def reconcile(self, kind: str, name: str, now: datetime | None = None) -> Outcome:
        """One reconcile, no follow-ups."""
        from poolboy.reconcilers import RECONCILERS

        ctx = Context(kube=self.kube, settings=self.settings, now=now or utcnow())
        try:
            return RECONCILERS[kind](ctx, self.op if kind != keys.CLAIM else self.ns, name)
        except PermanentError as error:
            return error

    def outcome(self, log: list[tuple[str, Outcome]], kind: str, name: str) -> Outcome:
        outcomes = [o for k, o in log if k == self.key(kind, name)]
        assert outcomes, f"{kind} {name} was not reconciled"
        return outcomes[-1]

    def patch(self, kind: str, name: str, patch: dict[str, Any], status: bool = False) -> dict[str, Any]:
        return self.kube.patch_merge(self.api, kind, name, self.op, patch, status=status)


@pytest.fixture()
def henv(devcluster) -> Iterator[HandleEnv]:
    suffix = uuid.uuid4().hex[:8]
    settings = Settings.from_env(operator_namespace=f"hop-{suffix}", api_timeout=10.0)
    kube = KubeClient.from_settings(settings, kubeconfig=str(devcluster.kubeconfig))
    for name in (settings.operator_namespace, f"huser-{suffix}"):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield HandleEnv(kube, settings, f"huser-{suffix}")
    kube.close()


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["HandleEnv", "henv", "ts"]

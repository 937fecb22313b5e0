"""Shared fixture and helpers for the claim integration tests (no tests of its own).

Each test gets its own operator namespace and user namespace on the session devcluster, a real ``KubeClient``,
and a :class:`tests.converge.Converger` that calls the domain reconcilers directly until quiescent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from poolboy import keys
from poolboy.context import Context, utcnow
from poolboy.kube import KubeClient
from poolboy.result import PermanentError, Result
from poolboy.settings import Settings
from tests.converge import Converger


class ClaimEnv:
    """One test's world: namespaces, client, converger and small object factories."""

    def __init__(self, kube: KubeClient, settings: Settings, user_namespace: str) -> None:
        self.kube = kube
        self.settings = settings
        self.d = settings.domain
        self.api = settings.api_version
        self.op = settings.operator_namespace
        self.ns = user_namespace
        self.converger = Converger(kube, settings)

    # --- factories -------------------------------------------------------------------------------------------

    def provider(self, name: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
        body = {"apiVersion": self.api, "kind": "ResourceProvider",
                "metadata": {"name": name, "namespace": self.op}, "spec": spec or {}}
        return self.kube.create(body)

    def configmap_provider(self, name: str, **spec: Any) -> dict[str, Any]:
        """A provider whose resources are ConfigMaps in the user namespace (any kind would do)."""
        base: dict[str, Any] = {
            "override": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": self.ns}},
            "matchIgnore": ["/data(/.*)?"],
        }
        base.update(spec)
        return self.provider(name, base)

    def claim(self, name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
        body = {"apiVersion": self.api, "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": self.ns, **metadata}, "spec": spec}
        return self.kube.create(body)

    def handle(self, name: str, spec: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
        body = {"apiVersion": self.api, "kind": "ResourceHandle",
                "metadata": {"name": name, "namespace": self.op, "labels": labels or {},
                             "finalizers": [self.d]},
                "spec": spec}
        return self.kube.create(body)

    def provider_ref(self, name: str) -> dict[str, str]:
        return {"apiVersion": self.api, "kind": "ResourceProvider", "name": name, "namespace": self.op}

    # --- reads -----------------------------------------------------------------------------------------------

    def get_claim(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none(self.api, "ResourceClaim", name, self.ns)

    def get_handle(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none(self.api, "ResourceHandle", name, self.op)

    def handles(self) -> list[dict[str, Any]]:
        return self.kube.list(self.api, "ResourceHandle", self.op)

    def claim_handle(self, name: str) -> dict[str, Any]:
        claim = self.get_claim(name)
        assert claim is not None
        ref = (claim.get("status") or {}).get("resourceHandle")
        assert ref, f"claim {name} is not bound: {claim.get('status')}"
        handle = self.get_handle(ref["name"])
        assert handle is not None
        return handle

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.kube.list("v1", "Event", self.ns)
                if (e.get("involvedObject") or {}).get("name") == name]

    # --- driving ---------------------------------------------------------------------------------------------

    def key(self, name: str) -> str:
        return keys.make(keys.CLAIM, self.ns, name)

    def converge(self, name: str, now: datetime | None = None) -> list[tuple[str, Result | PermanentError]]:
        if now is not None:
            self.converger.clock = lambda: now
        try:
            return self.converger.run(self.key(name))
        finally:
            self.converger.clock = utcnow

    def reconcile_claim(self, name: str, now: datetime | None = None) -> Result | PermanentError:
        """One claim reconcile only (no follow-ups), e.g. to observe an intermediate state."""
        from poolboy.reconcilers import RECONCILERS

        ctx = Context(kube=self.kube, settings=self.settings, now=now or utcnow())
        try:
            return RECONCILERS["claim"](ctx, self.ns, name)
        except PermanentError as error:
            return error

    def claim_outcome(self, log: list[tuple[str, Result | PermanentError]], name: str) -> Result | PermanentError:
        outcomes = [o for k, o in log if k == self.key(name)]
        assert outcomes, f"claim {name} was not reconciled"
        return outcomes[-1]

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        claim = self.get_claim(name) or {}
        return next((c for c in (claim.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


@pytest.fixture(name="env")
def env_fixture(devcluster) -> Iterator[ClaimEnv]:
    suffix = uuid.uuid4().hex[:8]
    settings = Settings.from_env(operator_namespace=f"op-{suffix}", api_timeout=10.0, manage_claims_interval=30.0)
    kube = KubeClient.from_settings(settings, kubeconfig=str(devcluster.kubeconfig))
    for name in (settings.operator_namespace, f"user-{suffix}"):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield ClaimEnv(kube, settings, f"user-{suffix}")
    kube.close()


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_ts(value: str) -> datetime:
    from poolboy.timeutil import parse_timestamp

    return parse_timestamp(value)


__all__ = ["ClaimEnv", "env_fixture", "parse_ts", "timedelta", "ts"]

"""Shared fixture and helpers for handle, pool, scaling and provider integration tests (no tests of its own).

Each test gets its own operator namespace and user namespace on the session devcluster, a real ``KubeClient``
and a :class:`tests.converge.Converger` (the common part is :class:`tests.integration.support.KubeEnv`). Handles
are created directly (as a pool or a claim would) so the handle side is tested without depending on the claim
reconciler.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.integration.support import KubeEnv, Outcome, open_env, ts


class HandleEnv(KubeEnv):
    """One test's world, seen from the operator namespace: the driving helpers take a kind and a name."""

    # --- factories -----------------------------------------------------------------------------------------

    def provider(self, name: str, **spec: Any) -> dict[str, Any]:
        return self.kube.create({"apiVersion": self.api, "kind": "ResourceProvider",
                                 "metadata": {"name": name, "namespace": self.op}, "spec": spec})

    def configmap_provider(self, name: str, **spec: Any) -> dict[str, Any]:
        base: dict[str, Any] = {"override": {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"namespace": self.ns}}}
        base.update(spec)
        return self.provider(name, **base)

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

    def configmap(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none("v1", "ConfigMap", name, self.ns)

    def pool_handles(self, pool: str) -> list[dict[str, Any]]:
        return [h for h in self.handles(**{f"{self.d}/resource-pool-name": pool})
                if not h["metadata"].get("deletionTimestamp")]

    def events(self, name: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.events_in(namespace or self.op, name)

    # --- driving -------------------------------------------------------------------------------------------

    def key(self, kind: str, name: str) -> str:
        return self.key_of(kind, name)

    def converge(self, kind: str, name: str, now: datetime | None = None) -> list[tuple[str, Outcome]]:
        return self.converge_key(self.key(kind, name), now)

    def reconcile(self, kind: str, name: str, now: datetime | None = None) -> Outcome:
        """One reconcile, no follow-ups."""
        return self.reconcile_once(kind, name, now)

    def outcome(self, log: list[tuple[str, Outcome]], kind: str, name: str) -> Outcome:
        return self.last_outcome(log, kind, name)

    def patch(self, kind: str, name: str, patch: dict[str, Any], status: bool = False) -> dict[str, Any]:
        return self.kube.patch_merge(self.api, kind, name, self.op, patch, status=status)


@pytest.fixture()
def henv(devcluster) -> Iterator[HandleEnv]:
    yield from open_env(devcluster, HandleEnv, prefix="h")


__all__ = ["HandleEnv", "Outcome", "henv", "ts"]

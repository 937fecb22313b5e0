"""Shared fixture and helpers for the claim integration tests (no tests of its own).

Each test gets its own operator namespace and user namespace on the session devcluster, a real ``KubeClient``,
and a :class:`tests.converge.Converger` that calls the domain reconcilers directly until quiescent (the common
part is :class:`tests.integration.support.KubeEnv`; here are the claim-centred factories and drivers).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from poolboy import keys
from tests.integration.support import KubeEnv, Outcome, open_env, ts


class ClaimEnv(KubeEnv):
    """One test's world, seen from the claim side: the driving helpers take a claim's name."""

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

    # --- reads -----------------------------------------------------------------------------------------------

    def get_claim(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none(self.api, "ResourceClaim", name, self.ns)

    def claim_handle(self, name: str) -> dict[str, Any]:
        claim = self.get_claim(name)
        assert claim is not None
        ref = (claim.get("status") or {}).get("resourceHandle")
        assert ref, f"claim {name} is not bound: {claim.get('status')}"
        handle = self.get_handle(ref["name"])
        assert handle is not None
        return handle

    def events(self, name: str) -> list[dict[str, Any]]:
        return self.events_in(self.ns, name)

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        claim = self.get_claim(name) or {}
        return next((c for c in (claim.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)

    # --- driving ---------------------------------------------------------------------------------------------

    def key(self, name: str) -> str:
        return self.key_of(keys.CLAIM, name)

    def converge(self, name: str, now: datetime | None = None) -> list[tuple[str, Outcome]]:
        return self.converge_key(self.key(name), now)

    def reconcile_claim(self, name: str, now: datetime | None = None) -> Outcome:
        """One claim reconcile only (no follow-ups), e.g. to observe an intermediate state."""
        return self.reconcile_once(keys.CLAIM, name, now)

    def claim_outcome(self, log: list[tuple[str, Outcome]], name: str) -> Outcome:
        return self.last_outcome(log, keys.CLAIM, name)


@pytest.fixture(name="env")
def env_fixture(devcluster) -> Iterator[ClaimEnv]:
    yield from open_env(devcluster, ClaimEnv, manage_claims_interval=30.0)


def parse_ts(value: str) -> datetime:
    from poolboy.utils.timeutil import parse_timestamp

    return parse_timestamp(value)


__all__ = ["ClaimEnv", "env_fixture", "parse_ts", "timedelta", "ts"]

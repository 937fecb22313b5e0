"""Taking over from upstream Poolboy (docs/install.md, "Moving from upstream Poolboy").

The cluster holds what an upstream Poolboy v1 leaves behind (written here from the API's shapes,
docs/behaviour.md#resources): a provider, a pool, a pool handle bound to a claim, an unbound pool handle, the claim, and
the two ConfigMaps those handles manage, with upstream's finalizers (``D`` and the legacy ``D/handler``) and no
bookkeeping of this project. Then this project starts on the same API server. Measured with the API server's request
counters (devcluster's, or the real one's audit log): it creates, deletes and rebinds nothing — no new claim, handle or
managed resource, every uid and binding the same — and only adds its own bookkeeping (conditions, annotations) with
patches and status updates.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from controlplane.testing import ControlPlane
from devcluster.testing import DEFAULT_CRDS, DevCluster
from stack.local import LocalStack, StackOptions
from tests.clusters import E2E_CLUSTER
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
D = "poolboy.gpte.redhat.com"
V1 = f"{D}/v1"
NS, USER_NS = "poolboy", "demo"
POOLBOY_PLURALS = ("resourceclaims", "resourcehandles", "resourcepools", "resourceproviders")


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def ref(kind: str, name: str, namespace: str = NS) -> dict[str, str]:
    return {"apiVersion": V1, "kind": kind, "name": name, "namespace": namespace}


def config_map(guid: str, handle: str, claim: str | None) -> dict[str, Any]:
    """A managed resource as upstream created it for ``handle``: the provider's definition plus its annotations."""
    annotations = {f"{D}/resource-provider-name": "hello", f"{D}/resource-provider-namespace": NS,
                   f"{D}/resource-handle-name": handle, f"{D}/resource-handle-namespace": NS,
                   f"{D}/resource-index": "0", f"{D}/resource-pool-name": "hello",
                   f"{D}/resource-pool-namespace": NS}
    if claim:
        annotations.update({f"{D}/resource-claim-name": claim, f"{D}/resource-claim-namespace": USER_NS})
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": "hello"},
            "metadata": {"name": f"hello-{guid}", "namespace": USER_NS, "annotations": annotations}}


def handle(guid: str, claim: str | None, now: datetime, finalizer: str) -> dict[str, Any]:
    """A pool handle as upstream leaves it; bound to ``claim`` when given."""
    labels = {f"{D}/resource-pool-name": "hello", f"{D}/resource-pool-namespace": NS}
    spec: dict[str, Any] = {
        "provider": {"name": "hello", "parameterValues": {"greeting": "hello"}},
        "resourcePool": ref("ResourcePool", "hello"),
        "resources": [{"provider": ref("ResourceProvider", "hello")}],
        "lifespan": {"default": "1d", "maximum": "7d", "relativeMaximum": "3d",
                     "end": stamp(now + (timedelta(days=1) if claim else timedelta(hours=2)))},
    }
    if claim:
        labels.update({f"{D}/resource-claim-name": claim, f"{D}/resource-claim-namespace": USER_NS})
        spec["resourceClaim"] = ref("ResourceClaim", claim, USER_NS)
    return {"apiVersion": V1, "kind": "ResourceHandle", "spec": spec,
            "metadata": {"name": f"guid-{guid}", "namespace": NS, "labels": labels, "finalizers": [finalizer]}}


def handle_status(guid: str) -> dict[str, Any]:
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"hello-{guid}", "namespace": USER_NS}
    return {"ready": True, "healthy": True, "resources": [{"reference": reference, "ready": True, "healthy": True}]}


class Upstream:
    """Writes upstream's objects through the official client, then answers what became of them."""

    def __init__(self, api: client.ApiClient) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def create(self, plural: str, body: dict[str, Any], status: dict[str, Any] | None = None) -> None:
        namespace = body["metadata"]["namespace"]
        created = self.custom.create_namespaced_custom_object(D, "v1", namespace, plural, body)
        if status is not None:
            created["status"] = status
            self.custom.replace_namespaced_custom_object_status(D, "v1", namespace, plural,
                                                                body["metadata"]["name"], created)

    def write(self) -> None:
        now = datetime.now(UTC).replace(microsecond=0)
        for namespace in (NS, USER_NS):
            self.core.create_namespace({"metadata": {"name": namespace}})
        provider = yaml.safe_load((ROOT / "examples" / "10-provider.yaml").read_text())
        self.custom.create_namespaced_custom_object(D, "v1", NS, "resourceproviders", provider)
        pool = yaml.safe_load((ROOT / "examples" / "20-pool.yaml").read_text())
        pool["spec"]["minAvailable"] = 1
        pool["metadata"]["finalizers"] = [f"{D}/handler"]  # upstream's legacy finalizer
        self.create("resourcepools", pool, {"resourceHandles": [{"name": "guid-free1", "ready": True,
                                                                  "healthy": True}],
                                            "resourceHandleCount": {"available": 1, "ready": 1}})
        for guid, claim in (("bound", "hello"), ("free1", None)):
            self.core.create_namespaced_config_map(USER_NS, config_map(guid, f"guid-{guid}", claim))
            self.create("resourcehandles", handle(guid, claim, now, D if claim else f"{D}/handler"),
                        handle_status(guid))
        state = copy.deepcopy(config_map("bound", "guid-bound", "hello"))
        self.create("resourceclaims", {
            "apiVersion": V1, "kind": "ResourceClaim",
            "metadata": {"name": "hello", "namespace": USER_NS, "finalizers": [D],
                         "annotations": {f"{D}/resource-claim-init-timestamp": stamp(now)}},
            "spec": {"provider": {"name": "hello", "parameterValues": {"greeting": "hello"}},
                     "lifespan": {"end": stamp(now + timedelta(days=1))}},
        }, {
            "provider": {"name": "hello", "parameterValues": {"greeting": "hello"}},
            "resourceHandle": {"apiVersion": V1, "kind": "ResourceHandle", "name": "guid-bound", "namespace": NS},
            "lifespan": {"start": stamp(now), "end": stamp(now + timedelta(days=1)), "firstReady": stamp(now),
                         "maximum": "7d", "relativeMaximum": "3d"},
            "resources": [{"provider": ref("ResourceProvider", "hello"), "reference": handle_status("bound")[
                "resources"][0]["reference"], "state": state, "ready": True, "healthy": True}],
            "ready": True, "healthy": True,
        })

    def snapshot(self) -> dict[str, Any]:
        """Identity and binding of everything: uids, handle → claim, claim → handle, managed resources."""
        handles = self.custom.list_namespaced_custom_object(D, "v1", NS, "resourcehandles")["items"]
        claims = self.custom.list_namespaced_custom_object(D, "v1", USER_NS, "resourceclaims")["items"]
        maps = self.core.list_namespaced_config_map(USER_NS).items
        return {
            "handles": {h["metadata"]["name"]: (h["metadata"]["uid"], (h["spec"].get("resourceClaim") or {})
                                                .get("name")) for h in handles},
            "claims": {c["metadata"]["name"]: (c["metadata"]["uid"], c["status"]["resourceHandle"]["name"])
                       for c in claims},
            "configmaps": {m.metadata.name: m.metadata.uid for m in maps if m.metadata.name.startswith("hello-")},
        }

    def conditions(self, plural: str, namespace: str, name: str) -> dict[str, str]:
        obj = self.custom.get_namespaced_custom_object(D, "v1", namespace, plural, name)
        return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


@pytest.fixture()
def cluster() -> Iterator[DevCluster | ControlPlane]:
    with (ControlPlane if E2E_CLUSTER == "real" else DevCluster)(crds=[DEFAULT_CRDS]) as running:
        yield running


def test_this_project_takes_over_upstream_objects_without_recreating_rebinding_or_deleting(
        cluster: DevCluster | ControlPlane, monkeypatch: pytest.MonkeyPatch) -> None:
    api = cluster.api_client()
    upstream = Upstream(api)
    upstream.write()
    before = upstream.snapshot()
    cluster.reset_counters()

    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    with LocalStack(StackOptions(workers=1, concurrency=2, use_current_context=True, env=dict(FAST_INTERVALS))):
        wait_for(lambda: upstream.conditions("resourceclaims", USER_NS, "hello").get("Ready") == "True"
                 and upstream.conditions("resourcepools", NS, "hello").get("Ready") == "True"
                 and all(upstream.conditions("resourcehandles", NS, f"guid-{g}").get("Synced") == "True"
                         for g in ("bound", "free1")),
                 timeout=60, interval=0.5, message="claim, pool and handles reconciled by this project")
        after = upstream.snapshot()
        counters = cluster.counters()
        bound = upstream.custom.get_namespaced_custom_object(D, "v1", NS, "resourcehandles", "guid-bound")
        pool = upstream.custom.get_namespaced_custom_object(D, "v1", NS, "resourcepools", "hello")
    api.close()

    # bookkeeping this project adds (docs/install.md): the claim's uid on its handle, D beside a legacy finalizer
    assert bound["metadata"]["annotations"][f"{D}/resource-claim-uid"] == after["claims"]["hello"][0]
    assert pool["metadata"]["finalizers"] == [f"{D}/handler", D]

    assert after == before, "same objects (uids), same bindings, same managed resources"
    writes: dict[tuple[str, str], int] = {}
    for item in counters["items"]:
        if item["verb"] in ("create", "delete", "deletecollection", "update", "patch"):
            key = (item["verb"], item["resource"])
            writes[key] = writes.get(key, 0) + item["count"]
    print(f"\nAPI writes during the takeover, by verb and resource: {dict(sorted(writes.items()))}")
    for plural in (*(f"{p}.{D}" for p in POOLBOY_PLURALS), "configmaps"):  # as the counters name them
        assert writes.get(("create", plural), 0) == 0, f"created {plural}: {writes}"
        assert writes.get(("delete", plural), 0) == 0, f"deleted {plural}: {writes}"
        assert writes.get(("deletecollection", plural), 0) == 0, f"deleted {plural}: {writes}"

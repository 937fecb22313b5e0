"""Claims that must wait for a handle (``disableCreation``) on the real stack with 4 worker processes: served
oldest first as the pool refills, and never a double bind (docs/behaviour.md#binding: waiting claims
are served oldest first)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from kubernetes import client, watch

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.test_claim_burst import NS, D, create, custom_api
from tests.waiting import wait_for

USER_NS = "waiting"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=2, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        api = custom_api(running)
        client.CoreV1Api(api.api_client).create_namespace({"metadata": {"name": USER_NS}})
        yield running


def provider_and_pool(api: client.CustomObjectsApi, name: str, min_available: int) -> None:
    create(api, NS, "resourceproviders", {
        "apiVersion": f"{D}/v1", "kind": "ResourceProvider", "metadata": {"name": name, "namespace": NS},
        "spec": {
            "disableCreation": True,
            "template": {"enable": True, "definition": {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": USER_NS}, "data": {"v": "x"}}},
            "override": {"metadata": {"name": name + "-{{ guid }}"}},
        },
    })
    create(api, NS, "resourcepools", {
        "apiVersion": f"{D}/v1", "kind": "ResourcePool", "metadata": {"name": name, "namespace": NS},
        "spec": {"minAvailable": min_available, "provider": {"name": name}},
    })


def claims_of(api: client.CustomObjectsApi, prefix: str) -> list[dict]:
    items = api.list_namespaced_custom_object(D, "v1", USER_NS, "resourceclaims")["items"]
    return sorted((c for c in items if c["metadata"]["name"].startswith(prefix)), key=lambda c: c["metadata"]["name"])


def create_claims(api: client.CustomObjectsApi, prefix: str, provider: str, count: int) -> list[str]:
    names = [f"{prefix}{index:03d}" for index in range(count)]
    for name in names:  # one client in order: creation order == name order
        create(api, USER_NS, "resourceclaims", {
            "apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": USER_NS},
            "spec": {"provider": {"name": provider}}})
    return names


def condition(claim: dict, type_: str) -> dict:
    return next((c for c in (claim.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


class BindOrder:
    """The order in which claims are seen bound, from a watch (a claim counts once, when its handle appears)."""

    def __init__(self, api: client.CustomObjectsApi, prefix: str) -> None:
        self.api, self.prefix = api, prefix
        self.order: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BindOrder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _run(self) -> None:
        stream = watch.Watch()
        while not self._stop.is_set():
            for event in stream.stream(self.api.list_namespaced_custom_object, D, "v1", USER_NS, "resourceclaims",
                                       timeout_seconds=5):
                obj = event["object"]
                name = obj["metadata"]["name"]
                if name.startswith(self.prefix) and (obj.get("status") or {}).get("resourceHandle") \
                        and name not in self.order:
                    self.order.append(name)
                if self._stop.is_set():
                    return


def test_waiting_claims_are_served_oldest_first_as_the_pool_refills(stack: LocalStack) -> None:
    api = custom_api(stack)
    provider_and_pool(api, "fifo", 0)
    names = create_claims(api, "f", "fifo", 60)
    wait_for(lambda: all(condition(c, "Bound").get("reason") == "NoMatchingHandle" for c in claims_of(api, "f"))
             and len(claims_of(api, "f")) == len(names), timeout=120, interval=0.5, message="60 waiting claims")
    pool_size = 8
    with BindOrder(api, "f") as order:
        api.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", "fifo", {"spec": {"minAvailable": pool_size}})
        wait_for(lambda: len(order.order) == len(names), timeout=240, interval=0.5,
                 message="every waiting claim bound as the pool refills")
    worst = 0
    for position, name in enumerate(order.order):
        older_unbound = sum(1 for other in names[:names.index(name)] if other not in order.order[:position])
        worst = max(worst, older_unbound)
    print(f"bind order: {order.order}; most older claims still waiting at a bind: {worst}")
    assert worst < pool_size, "a claim was served while at least a pool's worth of older claims still waited"


def test_300_waiting_claims_against_a_pool_of_150_never_double_bind(stack: LocalStack) -> None:
    api = custom_api(stack)
    provider_and_pool(api, "big", 150)

    def unbound_pool_handles() -> int:
        items = api.list_namespaced_custom_object(D, "v1", NS, "resourcehandles",
                                                  label_selector=f"{D}/resource-pool-name=big")["items"]
        return sum(1 for h in items if not h["spec"].get("resourceClaim"))

    wait_for(lambda: unbound_pool_handles() >= 150, timeout=240, interval=1, message="150 pool handles")
    started = time.monotonic()
    names = create_claims(api, "b", "big", 300)
    wait_for(lambda: sum(1 for c in claims_of(api, "b") if (c.get("status") or {}).get("resourceHandle")) == 300,
             timeout=400, interval=1, message="all 300 claims bound as the pool refills")
    print(f"300 claims bound {time.monotonic() - started:.1f}s after the first was created")
    bound = {c["metadata"]["name"]: c["status"]["resourceHandle"]["name"] for c in claims_of(api, "b")}
    assert sorted(bound) == names
    assert len(set(bound.values())) == 300, "a handle is bound to two claims"
    handles = api.list_namespaced_custom_object(D, "v1", NS, "resourcehandles")["items"]
    claimed = Counter(h["spec"]["resourceClaim"]["name"] for h in handles
                      if (h["spec"].get("resourceClaim") or {}).get("namespace") == USER_NS
                      and h["spec"]["resourceClaim"]["name"].startswith("b"))
    assert max(claimed.values()) == 1, "a claim got two handles"
    for claim_name, handle_name in bound.items():
        handle = next(h for h in handles if h["metadata"]["name"] == handle_name)
        assert handle["spec"]["resourceClaim"]["name"] == claim_name
    wait_for(lambda: unbound_pool_handles() >= 150, timeout=300, interval=1, message="pool refilled to 150")

"""resourceVersions are opaque strings (the API conventions: compare them for equality only): the whole product runs
on devcluster issuing resourceVersions that are no numbers at all — a pool fills, a burst binds without a double
bind, a managed resource's change reaches its claim's status, deletions clean up."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from stack.local import LocalStack, StackOptions
from tests.e2e.burst import Burst, Watchdog, custom_api, wait_settled
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

POOL, CLAIMS = 10, 20

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def opaque_stack() -> Iterator[LocalStack]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEVCLUSTER_OPAQUE_RESOURCE_VERSIONS", "1")  # devcluster/versions.py
        with LocalStack(StackOptions(cluster="devcluster", workers=2, concurrency=2,
                                     env=dict(FAST_INTERVALS))) as running:
            yield running


def test_the_product_never_reads_an_order_into_resource_versions(opaque_stack: LocalStack) -> None:
    stack = opaque_stack
    burst = Burst(custom_api(stack), "opaque", "opaque", POOL)
    burst.setup()
    wait_for(lambda: burst.unbound_pool_handles() >= POOL, timeout=60, interval=0.2, message="pool filled")
    versions = [h["metadata"]["resourceVersion"] for h in burst.handles()]
    assert versions and not any(v.isdigit() for v in versions), versions  # the test tests what it says

    watchdog = Watchdog(burst).start()
    creator = threading.Thread(target=lambda: [burst.claim(i) for i in range(CLAIMS)])
    creator.start()
    creator.join(60)
    wait_for(lambda: burst.all_bound(CLAIMS) and burst.unbound_pool_handles() == POOL, timeout=60, interval=0.2,
             message=f"every claim bound, the pool refilled\n{stack.logs()}")

    claim = burst.claims()[0]
    config_map = claim["status"]["resources"][0]["reference"]["name"]
    client.CoreV1Api(burst.api.api_client).patch_namespaced_config_map(config_map, burst.namespace,
                                                                       {"data": {"extra": "seen"}})

    def mirrored() -> bool:
        current = next(c for c in burst.claims() if c["metadata"]["name"] == claim["metadata"]["name"])
        return (current["status"]["resources"][0].get("state") or {}).get("data", {}).get("extra") == "seen"

    wait_for(mirrored, timeout=30, interval=0.2, message="the managed resource's change mirrored into the claim")

    for item in burst.claims():
        burst.api.delete_namespaced_custom_object("poolboy.gpte.redhat.com", "v1", burst.namespace,
                                                  "resourceclaims", item["metadata"]["name"])
    wait_for(lambda: not burst.claims() and len(burst.handles()) == POOL and len(burst.config_maps()) == POOL,
             timeout=60, interval=0.5, message="every claim's handle and resources deleted")
    wait_settled(burst, log_dir=stack.log_dir, redis_url=stack.redis_url, context="opaque resourceVersions: ")
    assert not watchdog.stop()

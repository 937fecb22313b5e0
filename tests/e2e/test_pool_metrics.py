"""Per-pool metrics on the running stack: the watcher's /metrics counts a warm hit when a claim takes a
ready pool handle, a cold creation when a claim makes its own handle, the pool handles' time to ready, and the
outdated handles of a pool whose spec changed under ``updateStrategy: Keep``."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS, free_port_pair
from tests.e2e.provider_support import NS, D, User, config_map_provider, status
from tests.waiting import wait_for


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=1, concurrency=2, env=dict(FAST_INTERVALS),
                                 metrics_port=free_port_pair())) as running:
        yield running


def watcher_samples(stack: LocalStack) -> list[Sample]:
    """Every sample on the watcher's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{stack.options.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def watcher_sample(stack: LocalStack, name: str, **labels: str) -> float:
    return next((sample.value for sample in watcher_samples(stack)
                 if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())), 0.0)


def ready_unbound(user: User) -> int:
    return sum(1 for h in user.pool_handles("pool-metrics")
               if status(h).get("ready") and not h["metadata"].get("deletionTimestamp"))


def test_warm_hits_cold_creations_time_to_ready_and_outdated_handles(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("metrics")
    user.provider("p-metrics", config_map_provider(ns))
    user.pool("pool-metrics", {"minAvailable": 2, "provider": {"name": "p-metrics", "parameterValues": {}}})
    wait_for(lambda: ready_unbound(user) == 2, timeout=30, message="2 ready pool handles")
    user.claim(ns, "warm", {"provider": {"name": "p-metrics", "parameterValues": {}}})
    user.wait_bound(ns, "warm")
    user.claim(ns, "cold", {"provider": {"name": "p-metrics", "parameterValues": {"greeting": "other"}}})
    user.wait_bound(ns, "cold")
    wait_for(lambda: watcher_sample(stack, "poolboy_pool_binds_total", pool="pool-metrics", handle="ready") == 1,
             timeout=15, message="one warm hit")
    wait_for(lambda: watcher_sample(stack, "poolboy_claim_handles_created_total", provider="p-metrics") == 1,
             timeout=15, message="one cold creation")
    assert watcher_sample(stack, "poolboy_pool_handle_ready_seconds_count", pool="pool-metrics") >= 2
    wait_for(lambda: ready_unbound(user) == 2, timeout=30, message="the pool refilled to 2 ready handles")

    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", "pool-metrics",
                                               {"spec": {"provider": {"parameterValues": {"greeting": "new"}}}})
    wait_for(lambda: watcher_sample(stack, "poolboy_pool_handles_outdated", pool="pool-metrics") == 2, timeout=15,
             message="the two unbound handles outdated (updateStrategy Keep)")


def test_an_autoscaling_pools_decision_is_on_the_watchers_metrics(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("metrics-auto")
    user.provider("p-metrics-auto", config_map_provider(ns))
    user.pool("pool-metrics-auto", {"minAvailable": 2, "provider": {"name": "p-metrics-auto", "parameterValues": {}},
                                    "autoscaling": {"maxAvailable": 5}})
    wait_for(lambda: (status(user.get_pool("pool-metrics-auto")).get("autoscaling") or {}).get("target") == 2,
             timeout=30, interval=0.5, message="the pool's autoscaling status")
    wait_for(lambda: watcher_sample(stack, "poolboy_pool_autoscaling_target", pool="pool-metrics-auto") == 2,
             timeout=15, interval=0.2, message="poolboy_pool_autoscaling_target of the pool")
    rate = status(user.get_pool("pool-metrics-auto"))["autoscaling"]["claimsPerHour"]
    assert watcher_sample(stack, "poolboy_pool_autoscaling_claims_per_hour", pool="pool-metrics-auto") == rate
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", "pool-metrics-auto",
                                               {"spec": {"autoscaling": None}})
    wait_for(lambda: "pool-metrics-auto" not in watcher_pools(stack, "poolboy_pool_autoscaling_target"), timeout=15,
             interval=0.2, message="no autoscaling gauge once the pool stops autoscaling")


def watcher_pools(stack: LocalStack, name: str) -> set[str]:
    """The pools that have a sample of ``name`` on the watcher's /metrics."""
    return {sample.labels.get("pool", "") for sample in watcher_samples(stack) if sample.name == name}


def test_the_watcher_reports_its_deliveries_to_redis(stack: LocalStack) -> None:
    """What an operator watches to tell a watcher that keeps up (one event per round trip, nothing queued) from one
    that falls behind (larger batches, events queued): the watcher's delivery queue (watcher/delivery.py)."""
    user = User(stack)
    ns = user.namespace("deliveries")
    before = watcher_sample(stack, "poolboy_watcher_delivery_batch_events_sum")
    for index in range(3):
        user.claim(ns, f"d{index}", {"resources": []})
    wait_for(lambda: watcher_sample(stack, "poolboy_watcher_delivery_batch_events_sum") >= before + 3, timeout=15,
             message="the claims' events delivered through the watcher's queues")
    assert watcher_sample(stack, "poolboy_watcher_delivery_batch_events_count") >= 1
    wait_for(lambda: watcher_sample(stack, "poolboy_watcher_delivery_queued_events") == 0, timeout=15,
             message="nothing left queued once the claims' events are in")

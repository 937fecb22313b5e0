"""Metrics the watcher derives from the objects it sees (watcher/observed.py): claim latencies, pool gauges."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from watcher.observed import CLAIM_BIND, CLAIM_READY, ClaimTimings, PoolStats

D = "poolboy.gpte.redhat.com"
WAITING = f"{D}/resource-claim-waiting"


def claim(uid: str, bound: bool = False, ready: bool = False, waiting: bool = False, provider: str = "p") -> dict:
    status = [{"type": "Bound", "status": "True" if bound else "False"},
              {"type": "Ready", "status": "True" if ready else "False"}]
    labels = {WAITING: ""} if waiting else {}
    return {"apiVersion": f"{D}/v1", "kind": "ResourceClaim",
            "metadata": {"uid": uid, "namespace": "u", "name": uid, "labels": labels},
            "spec": {"provider": {"name": provider}}, "status": {"conditions": status}}


def handle(name: str, pool: str | None = "pool-a", bound: bool = False, ready: bool = False,
           deleting: bool = False) -> dict:
    metadata: dict = {"namespace": "poolboy", "name": name}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict = {"resourcePool": {"name": pool}} if pool else {}
    if bound:
        spec["resourceClaim"] = {"name": "c", "namespace": "u"}
    return {"apiVersion": f"{D}/v1", "kind": "ResourceHandle", "metadata": metadata, "spec": spec,
            "status": {"ready": ready}}


def count(histogram) -> float:
    return next(s.value for m in histogram.collect() for s in m.samples if s.name.endswith("_count"))


def test_bind_and_ready_latency_are_observed_once_per_created_claim() -> None:
    timings = ClaimTimings()
    bind0, ready0 = count(CLAIM_BIND), count(CLAIM_READY)
    timings.on_event("ADDED", claim("a"))
    timings.on_event("MODIFIED", claim("a", bound=True))
    timings.on_event("MODIFIED", claim("a", bound=True))  # a later change of a bound claim: not a second bind
    assert (count(CLAIM_BIND), count(CLAIM_READY)) == (bind0 + 1, ready0)
    timings.on_event("MODIFIED", claim("a", bound=True, ready=True))
    timings.on_event("MODIFIED", claim("a", bound=True, ready=True))
    assert (count(CLAIM_BIND), count(CLAIM_READY)) == (bind0 + 1, ready0 + 1)


def test_claims_not_seen_created_are_not_measured() -> None:
    timings = ClaimTimings()
    bind0 = count(CLAIM_BIND)
    timings.on_event("LISTED", claim("b"))  # a re-list: the creation time is unknown
    timings.on_event("MODIFIED", claim("b", bound=True, ready=True))
    timings.on_event("ADDED", claim("c"))
    timings.on_event("DELETED", claim("c"))
    timings.on_event("MODIFIED", claim("c", bound=True))
    assert count(CLAIM_BIND) == bind0


def samples(stats: PoolStats) -> dict[tuple[str, str], float]:
    registry = CollectorRegistry()
    registry.register(stats)
    return {(s.name, next(iter(s.labels.values()), "")): s.value
            for m in registry.collect() for s in m.samples}


def test_pool_gauges_follow_handle_events() -> None:
    stats = PoolStats(WAITING)
    stats.on_event("LISTED", handle("h1", ready=True))
    stats.on_event("ADDED", handle("h2"))
    stats.on_event("ADDED", handle("h3", bound=True, ready=True))
    stats.on_event("ADDED", handle("h4", deleting=True))
    stats.on_event("ADDED", handle("h5", pool=None))  # not from a pool
    got = samples(stats)
    assert got[("poolboy_pool_handles_available", "pool-a")] == 2
    assert got[("poolboy_pool_handles_ready", "pool-a")] == 1
    assert got[("poolboy_pool_handles_unready", "pool-a")] == 1
    assert got[("poolboy_pool_handles_bound", "pool-a")] == 1
    stats.on_event("MODIFIED", handle("h2", bound=True))
    stats.on_event("DELETED", handle("h1"))
    got = samples(stats)
    assert got[("poolboy_pool_handles_available", "pool-a")] == 0
    assert got[("poolboy_pool_handles_bound", "pool-a")] == 2
    stats.clear()
    assert not any(name.startswith("poolboy_pool_handles") for name, _ in samples(stats))


def test_waiting_claims_are_counted_per_provider() -> None:
    stats = PoolStats(WAITING)
    stats.on_event("ADDED", claim("a", waiting=True, provider="p1"))
    stats.on_event("ADDED", claim("b", waiting=True, provider="p1"))
    stats.on_event("ADDED", claim("c", provider="p2"))
    assert samples(stats)[("poolboy_claims_waiting", "p1")] == 2
    stats.on_event("MODIFIED", claim("a", bound=True, provider="p1"))
    stats.on_event("DELETED", claim("b", waiting=True, provider="p1"))
    assert ("poolboy_claims_waiting", "p1") not in samples(stats)


def test_outdated_pool_handles_follow_the_pools_revision() -> None:
    stats = PoolStats(WAITING, f"{D}/resource-pool-revision")

    def revised(name: str, revision: str) -> dict:
        obj = handle(name)
        obj["metadata"]["annotations"] = {f"{D}/resource-pool-revision": revision}
        return obj

    stats.on_event("ADDED", revised("h1", "r1"))
    stats.on_event("ADDED", revised("h2", "r2"))
    stats.on_event("ADDED", handle("h3"))  # made before revisions
    assert gauge(stats, "poolboy_pool_handles_outdated", "pool-a") == 0, "no pool revision known yet"
    stats.on_event("MODIFIED", {"kind": "ResourcePool", "metadata": {"namespace": "poolboy", "name": "pool-a"},
                                "status": {"revision": "r2"}})
    assert gauge(stats, "poolboy_pool_handles_outdated", "pool-a") == 2


def test_an_autoscaling_pools_decision_is_exported_per_pool() -> None:
    stats = PoolStats(WAITING)

    def pool(name: str, autoscaling: dict | None) -> dict:
        return {"kind": "ResourcePool", "metadata": {"namespace": "poolboy", "name": name},
                "status": {"revision": "r1", **({"autoscaling": autoscaling} if autoscaling else {})}}

    stats.on_event("ADDED", pool("learning", {"target": 6, "claimsPerHour": 1.5, "expectedPerHour": 12.0}))
    stats.on_event("ADDED", pool("reactive", {"target": 2, "claimsPerHour": 0.0}))
    stats.on_event("ADDED", pool("static", None))
    got = samples(stats)
    assert got[("poolboy_pool_autoscaling_target", "learning")] == 6
    assert got[("poolboy_pool_autoscaling_expected_per_hour", "learning")] == 12.0
    assert got[("poolboy_pool_autoscaling_claims_per_hour", "reactive")] == 0.0
    assert ("poolboy_pool_autoscaling_expected_per_hour", "reactive") not in got  # no period: no forecast
    assert not any(pool_name == "static" for name, pool_name in got if name.startswith("poolboy_pool_autoscaling"))
    stats.on_event("MODIFIED", pool("learning", {"target": 9, "claimsPerHour": 30.0, "expectedPerHour": 12.0}))
    stats.on_event("MODIFIED", pool("reactive", None))  # autoscaling switched off
    stats.on_event("DELETED", pool("static", None))
    got = samples(stats)
    assert got[("poolboy_pool_autoscaling_target", "learning")] == 9
    assert not any(pool_name == "reactive" for name, pool_name in got if name.startswith("poolboy_pool_autoscaling"))
    stats.on_event("DELETED", pool("learning", None))
    assert not any(name.startswith("poolboy_pool_autoscaling") for name, _ in samples(stats))


def test_each_pools_minimum_is_exported_so_an_empty_pool_meant_to_be_empty_is_told_apart() -> None:
    stats = PoolStats(WAITING)

    def pool(name: str, spec: dict) -> dict:
        return {"kind": "ResourcePool", "metadata": {"namespace": "poolboy", "name": name}, "spec": spec}

    stats.on_event("ADDED", pool("labs", {"minAvailable": 3}))
    stats.on_event("ADDED", pool("on-demand", {}))
    assert gauge(stats, "poolboy_pool_min_available", "labs") == 3
    assert samples(stats)[("poolboy_pool_min_available", "on-demand")] == 0
    stats.on_event("MODIFIED", pool("labs", {"minAvailable": 5}))  # kubectl scale
    assert gauge(stats, "poolboy_pool_min_available", "labs") == 5
    stats.on_event("DELETED", pool("labs", {"minAvailable": 5}))
    assert ("poolboy_pool_min_available", "labs") not in samples(stats)


def test_handles_out_of_sync_are_counted_per_provider_with_zero_for_a_healthy_one() -> None:
    stats = PoolStats(WAITING)

    def provided(name: str, provider: str, synced: str | None, pool: str | None = "pool-a") -> dict:
        obj = handle(name, pool=pool)
        obj["spec"]["provider"] = {"name": provider}
        if synced is not None:
            obj["status"]["conditions"] = [{"type": "Synced", "status": synced, "reason": "ResourceRejected"}]
        return obj

    stats.on_event("ADDED", provided("h1", "broken", "False"))
    stats.on_event("ADDED", provided("h2", "broken", "False", pool=None))  # a claim's own handle counts too
    stats.on_event("ADDED", provided("h3", "labs", "True"))
    stats.on_event("ADDED", provided("h4", "labs", None))  # not reconciled yet: not out of sync
    got = samples(stats)
    assert got[("poolboy_provider_handles_unsynced", "broken")] == 2
    assert got[("poolboy_provider_handles_unsynced", "labs")] == 0
    assert got[("poolboy_pool_handles_available", "pool-a")] == 3  # h2 belongs to no pool
    stats.on_event("MODIFIED", provided("h1", "broken", "True"))
    stats.on_event("DELETED", provided("h2", "broken", "False", pool=None))
    assert samples(stats)[("poolboy_provider_handles_unsynced", "broken")] == 0


def gauge(stats: PoolStats, name: str, pool: str) -> float:
    registry = CollectorRegistry()
    registry.register(stats)
    return registry.get_sample_value(name, {"pool": pool}) or 0.0


def sample(metric, suffix: str, **labels) -> float:
    """The value of ``metric``'s sample named ``…suffix`` with exactly ``labels`` (0 when absent)."""
    return next((s.value for m in metric.collect() for s in m.samples
                 if s.name.endswith(suffix) and s.labels == labels), 0.0)


def test_pool_flow_counts_warm_hits_unready_binds_cold_creations_and_time_to_ready() -> None:
    from watcher.pool_flow import COLD_CREATIONS, HANDLE_READY, POOL_BINDS, PoolFlow

    flow = PoolFlow()
    before = (sample(POOL_BINDS, "_total", pool="pool-f", handle="ready"),
              sample(POOL_BINDS, "_total", pool="pool-f", handle="unready"),
              sample(COLD_CREATIONS, "_total", provider="p"), sample(HANDLE_READY, "_count", pool="pool-f"))

    def h(name: str, pool: str | None = "pool-f", **state) -> dict:
        obj = handle(name, pool=pool, **state)
        obj["metadata"]["uid"] = name
        return obj

    flow.on_event("ADDED", h("a"))
    flow.on_event("MODIFIED", h("a", ready=True))
    flow.on_event("MODIFIED", h("a", ready=True, bound=True))
    flow.on_event("MODIFIED", h("a", ready=True, bound=True))  # still bound: not a second bind
    flow.on_event("ADDED", h("b"))
    flow.on_event("MODIFIED", h("b", bound=True))
    cold = h("c", pool=None, bound=True)
    cold["spec"]["provider"] = {"name": "p"}
    flow.on_event("ADDED", cold)
    after = (sample(POOL_BINDS, "_total", pool="pool-f", handle="ready"),
             sample(POOL_BINDS, "_total", pool="pool-f", handle="unready"),
             sample(COLD_CREATIONS, "_total", provider="p"), sample(HANDLE_READY, "_count", pool="pool-f"))
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1, 1]


def namespace_samples(stats: PoolStats, name: str) -> dict[tuple[str, str], float]:
    registry = CollectorRegistry()
    registry.register(stats)
    return {(s.labels["pool"], s.labels["namespace"]): s.value for m in registry.collect() for s in m.samples
            if s.name == name}


def test_per_namespace_gauges_count_waiting_and_bound_with_bounded_series() -> None:
    stats = PoolStats(WAITING)
    for index in range(14):  # 14 namespaces hold one handle each; two of them also wait
        bound = handle(f"h{index}", bound=True)
        bound["spec"]["resourceClaim"]["namespace"] = f"ns{index:02d}"
        stats.on_event("ADDED", bound)
    for name, namespace in (("w1", "ns13"), ("w2", "ns13"), ("w3", "ns12")):
        waiting = claim(name, waiting=True)
        waiting["metadata"].update({"namespace": namespace,
                                    "annotations": {f"{D}/resource-pool-name": "pool-a"}})
        stats.on_event("ADDED", waiting)
    waiting_counts = namespace_samples(stats, "poolboy_pool_namespace_waiting")
    bound_counts = namespace_samples(stats, "poolboy_pool_namespace_bound")
    assert waiting_counts[("pool-a", "ns13")] == 2 and waiting_counts[("pool-a", "ns12")] == 1
    assert len(bound_counts) == 11, "the 10 namespaces that wait or hold most, and the rest summed"
    assert bound_counts[("pool-a", "_other")] == 4 and bound_counts[("pool-a", "ns13")] == 1
    assert sum(bound_counts.values()) == 14

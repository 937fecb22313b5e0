"""Pools (docs/behaviour.md#pools, #deletion pool deleted, docs/behaviour.md#lifespans pool handle lifespans,
docs/behaviour.md#hard-cases pool items).

Pool reconciles are run one at a time so handle health/readiness can be set by hand in between (as the
handle reconciler would): the pool only reads handle status.
"""

from __future__ import annotations

from datetime import timedelta

from poolboy.context import utcnow
from poolboy.utils.timeutil import parse_timestamp
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv, ts

henv = support.henv  # the fixture


def _pool(henv: HandleEnv, name: str = "pool", **spec):
    henv.configmap_provider("cm", lifespan={"default": "1d", "maximum": "7d", "relativeMaximum": "3d",
                                            "unclaimed": "2h"})
    spec.setdefault("minAvailable", 2)
    spec.setdefault("provider", {"name": "cm", "parameterValues": {"x": 1}})
    return henv.pool(name, **spec)


def _set_handle_status(henv: HandleEnv, name: str, **status) -> None:
    henv.patch("ResourceHandle", name, {"status": status}, status=True)


def test_pool_creates_min_available_handles_with_labels_spec_and_finalizer(henv: HandleEnv) -> None:
    _pool(henv, vars={"v": "1"}, preferenceScore=5, resourceAnnotations={"a": "b"}, resourceLabels={"l": "m"})
    henv.reconcile("pool", "pool")
    handles = henv.pool_handles("pool")
    assert len(handles) == 2
    for handle in handles:
        assert handle["metadata"]["name"].startswith("guid-")
        labels = handle["metadata"]["labels"]
        assert labels[f"{henv.d}/resource-pool-name"] == "pool"
        assert labels[f"{henv.d}/resource-pool-namespace"] == henv.op
        assert f"{henv.d}/resource-pool-scaling-name" not in labels
        assert handle["metadata"]["finalizers"] == [henv.d]
        spec = handle["spec"]
        assert spec["resourcePool"] == {"apiVersion": henv.api, "kind": "ResourcePool", "name": "pool",
                                        "namespace": henv.op}
        assert spec["vars"] == {"v": "1"}
        assert spec["provider"] == {"name": "cm", "parameterValues": {"x": 1}}
        assert spec["preferenceScore"] == 5
        assert spec["resourceAnnotations"] == {"a": "b"}
        assert spec["resourceLabels"] == {"l": "m"}


def test_repeated_pool_reconcile_does_not_over_provision(henv: HandleEnv) -> None:
    _pool(henv)
    for _ in range(3):
        henv.reconcile("pool", "pool")
    assert len(henv.pool_handles("pool")) == 2


def test_pool_handle_lifespan_fields_each_from_provider_and_end_from_unclaimed(henv: HandleEnv) -> None:
    _pool(henv)
    now = utcnow()
    henv.reconcile("pool", "pool", now=now)
    lifespan = henv.pool_handles("pool")[0]["spec"]["lifespan"]
    assert lifespan["default"] == "1d"
    assert lifespan["maximum"] == "7d"
    assert lifespan["relativeMaximum"] == "3d"
    assert parse_timestamp(lifespan["end"]) == now + timedelta(hours=2)


def test_pool_lifespan_replaces_the_whole_provider_block(henv: HandleEnv) -> None:
    _pool(henv, lifespan={"maximum": "5d", "unclaimed": "30m"})
    now = utcnow()
    henv.reconcile("pool", "pool", now=now)
    lifespan = henv.pool_handles("pool")[0]["spec"]["lifespan"]
    assert lifespan == {"maximum": "5d", "end": ts(now + timedelta(minutes=30))}


def test_resources_mode_pool_copies_resources(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    resources = [{"provider": henv.provider_ref("cm"), "template": {"data": {"k": "v"}}}]
    henv.pool("pool", minAvailable=1, resources=resources)
    henv.reconcile("pool", "pool")
    handle = henv.pool_handles("pool")[0]
    assert handle["spec"]["resources"] == resources
    assert "provider" not in handle["spec"]


def test_max_unready_limits_creation(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=5, maxUnready=2)
    henv.reconcile("pool", "pool")
    handles = henv.pool_handles("pool")
    assert len(handles) == 2
    henv.reconcile("pool", "pool")
    assert len(henv.pool_handles("pool")) == 2, "N unready handles with maxUnready N: nothing is created"
    _set_handle_status(henv, handles[0]["metadata"]["name"], ready=True, healthy=True)
    henv.reconcile("pool", "pool")
    assert len(henv.pool_handles("pool")) == 3


def test_pool_status_lists_unbound_handles_and_counts(henv: HandleEnv) -> None:
    _pool(henv)
    henv.reconcile("pool", "pool")
    names = sorted(h["metadata"]["name"] for h in henv.pool_handles("pool"))
    _set_handle_status(henv, names[0], ready=True, healthy=True)
    henv.reconcile("pool", "pool")
    status = henv.get("ResourcePool", "pool")["status"]
    assert status["resourceHandleCount"] == {"available": 2, "ready": 1, "updated": 2, "outdated": 0}
    assert {"name": names[0], "healthy": True, "ready": True} in status["resourceHandles"]
    assert {"name": names[1]} in status["resourceHandles"], "unknown values are omitted, never null"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"


def test_bound_handles_are_not_counted_and_binding_replenishes(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=1)
    henv.reconcile("pool", "pool")
    handle = henv.pool_handles("pool")[0]
    henv.claim("c")
    henv.kube.patch_merge(henv.api, "ResourceHandle", handle["metadata"]["name"], henv.op, {
        "metadata": {"labels": henv.bound_labels("c")}, "spec": {"resourceClaim": henv.claim_ref("c")}})
    henv.reconcile("pool", "pool")
    handles = henv.pool_handles("pool")
    assert len(handles) == 2
    status = henv.get("ResourcePool", "pool")["status"]
    assert handle["metadata"]["name"] not in [h["name"] for h in status["resourceHandles"]]


def test_delete_unhealthy_handles(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=1, deleteUnhealthyResourceHandles=True)
    henv.reconcile("pool", "pool")
    old = henv.pool_handles("pool")[0]["metadata"]["name"]
    _set_handle_status(henv, old, healthy=False)
    henv.reconcile("pool", "pool")
    handle = henv.get_handle(old)
    assert handle is None or handle["metadata"].get("deletionTimestamp")
    names = [h["metadata"]["name"] for h in henv.pool_handles("pool")]
    assert len(names) == 1 and old not in names


def test_unhealthy_handles_kept_without_delete_flag(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=1)
    henv.reconcile("pool", "pool")
    old = henv.pool_handles("pool")[0]["metadata"]["name"]
    _set_handle_status(henv, old, healthy=False)
    henv.reconcile("pool", "pool")
    assert [h["metadata"]["name"] for h in henv.pool_handles("pool")] == [old]


def test_pool_spec_change_does_not_alter_existing_handles(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=1)
    henv.reconcile("pool", "pool")
    henv.patch("ResourcePool", "pool", {"spec": {"minAvailable": 2, "provider": {"parameterValues": {"x": 2}}}})
    henv.reconcile("pool", "pool")
    values = sorted(h["spec"]["provider"]["parameterValues"]["x"] for h in henv.pool_handles("pool"))
    assert values == [1, 2], "raising minAvailable replenishes; only new handles use new values"


def test_pool_deleted_deletes_unbound_handles_only(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=2)
    henv.reconcile("pool", "pool")
    bound, unbound = (h["metadata"]["name"] for h in henv.pool_handles("pool"))
    henv.claim("c")
    henv.kube.patch_merge(henv.api, "ResourceHandle", bound, henv.op, {
        "metadata": {"labels": henv.bound_labels("c")}, "spec": {"resourceClaim": henv.claim_ref("c")}})
    henv.kube.delete(henv.api, "ResourcePool", "pool", henv.op)
    henv.reconcile("pool", "pool")
    assert henv.get("ResourcePool", "pool") is None, "finalizer removed after cleanup"
    gone = henv.get_handle(unbound)
    assert gone is None or gone["metadata"].get("deletionTimestamp")
    kept = henv.get_handle(bound)
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")


def test_ignored_pool_creates_nothing(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.kube.create({"apiVersion": henv.api, "kind": "ResourcePool",
                      "metadata": {"name": "pool", "namespace": henv.op, "labels": {f"{henv.d}/ignore": "x"}},
                      "spec": {"minAvailable": 1, "provider": {"name": "cm"}}})
    henv.reconcile("pool", "pool")
    assert henv.pool_handles("pool") == []
    assert not henv.get("ResourcePool", "pool")["metadata"].get("finalizers")


def test_pool_status_carries_the_scale_replicas_and_selector_of_its_unbound_handles(henv: HandleEnv) -> None:
    _pool(henv)
    henv.reconcile("pool", "pool")
    status = henv.get("ResourcePool", "pool")["status"]
    assert status["replicas"] == status["resourceHandleCount"]["available"] == 2
    assert status["selector"] == \
        f"{henv.d}/resource-pool-name=pool,!{henv.d}/resource-claim-name,!{henv.d}/resource-handle-cleaning"
    selected = henv.kube.list(henv.api, "ResourceHandle", henv.op, label_selector=status["selector"])
    assert sorted(h["metadata"]["name"] for h in selected) == sorted(
        h["metadata"]["name"] for h in henv.pool_handles("pool"))

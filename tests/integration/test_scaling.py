"""Pool scaling (docs/behaviour.md#scalings)."""

from __future__ import annotations

from datetime import timedelta

from poolboy.context import utcnow
from poolboy.result import PermanentError
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv, ts

henv = support.henv  # the fixture


def _setup(henv: HandleEnv, min_available: int = 1) -> None:
    henv.configmap_provider("cm")
    henv.pool("pool", minAvailable=min_available, provider={"name": "cm"})


def _scaling_handles(henv: HandleEnv, name: str) -> list[dict]:
    return henv.handles(**{f"{henv.d}/resource-pool-scaling-name": name})


def _cycle(henv: HandleEnv, scaling: str, now=None) -> None:
    """Pool, then scaling, then pool: what the work queue would run after the enqueues (without handle reconciles)."""
    henv.reconcile("pool", "pool", now=now)
    henv.reconcile("scaling", scaling, now=now)
    henv.reconcile("pool", "pool", now=now)
    henv.reconcile("scaling", scaling, now=now)


def test_scaling_creates_extra_handles_on_top_of_min_available(henv: HandleEnv) -> None:
    _setup(henv, min_available=2)
    henv.scaling("s", "pool", 3)
    _cycle(henv, "s")
    assert len(henv.pool_handles("pool")) == 5
    assert len(_scaling_handles(henv, "s")) == 3
    status = henv.get("ResourcePoolScaling", "s")["status"]
    assert status["count"] == 3 and status["state"] == "done"


def test_scaling_count_counts_each_creation_once_when_repeated(henv: HandleEnv) -> None:
    _setup(henv)
    henv.scaling("s", "pool", 2)
    for _ in range(3):
        _cycle(henv, "s")
    assert len(_scaling_handles(henv, "s")) == 2
    assert henv.get("ResourcePoolScaling", "s")["status"]["count"] == 2


def test_scaling_handles_stay_counted_after_being_claimed_and_deleted(henv: HandleEnv) -> None:
    _setup(henv, min_available=0)
    henv.scaling("s", "pool", 1)
    _cycle(henv, "s")
    handle = _scaling_handles(henv, "s")[0]["metadata"]["name"]
    henv.kube.patch_merge(henv.api, "ResourceHandle", handle, henv.op, {"metadata": {"finalizers": []}})
    henv.kube.delete(henv.api, "ResourceHandle", handle, henv.op)
    _cycle(henv, "s")
    assert _scaling_handles(henv, "s") == [], "extra handles are not recreated once counted"
    assert henv.get("ResourcePoolScaling", "s")["status"]["count"] == 1


def test_future_at_waits_and_creates_nothing(henv: HandleEnv) -> None:
    _setup(henv, min_available=0)
    now = utcnow()
    henv.scaling("s", "pool", 2, at=ts(now + timedelta(hours=1)))
    henv.reconcile("pool", "pool", now=now)
    outcome = henv.reconcile("scaling", "s", now=now)
    assert _scaling_handles(henv, "s") == []
    assert henv.get("ResourcePoolScaling", "s")["status"]["state"] == "waiting"
    assert outcome.requeue_at == now + timedelta(hours=1)


def test_editing_at_to_now_starts_scaling(henv: HandleEnv) -> None:
    _setup(henv, min_available=0)
    now = utcnow()
    henv.scaling("s", "pool", 1, at=ts(now + timedelta(hours=1)))
    _cycle(henv, "s", now=now)
    henv.patch("ResourcePoolScaling", "s", {"spec": {"at": ts(now)}})
    _cycle(henv, "s", now=now)
    assert len(_scaling_handles(henv, "s")) == 1


def test_state_is_scaling_while_count_below_spec(henv: HandleEnv) -> None:
    _setup(henv, min_available=0)
    henv.pool("pool2", minAvailable=0, maxUnready=1, provider={"name": "cm"})
    henv.scaling("s", "pool2", 3)
    henv.reconcile("pool", "pool2")
    henv.reconcile("scaling", "s")
    status = henv.get("ResourcePoolScaling", "s")["status"]
    assert status["count"] == 1 and status["state"] == "scaling"


def test_pool_works_on_the_oldest_scaling_first(henv: HandleEnv) -> None:
    _setup(henv, min_available=0)
    henv.scaling("b-first", "pool", 1)
    henv.scaling("a-second", "pool", 1)
    henv.pool("unused", minAvailable=0, provider={"name": "cm"})
    henv.reconcile("pool", "pool")
    # same creationTimestamp second is possible; then the name decides ("a-second" < "b-first")
    first = sorted([henv.get("ResourcePoolScaling", n) for n in ("b-first", "a-second")],
                   key=lambda s: (s["metadata"]["creationTimestamp"], s["metadata"]["name"]))[0]
    assert [h["metadata"]["name"] for h in _scaling_handles(henv, first["metadata"]["name"])]
    henv.reconcile("pool", "pool")
    assert len(henv.pool_handles("pool")) == 2


def test_scaling_gets_controller_owner_reference_to_pool(henv: HandleEnv) -> None:
    _setup(henv)
    henv.scaling("s", "pool", 0)
    henv.reconcile("scaling", "s")
    pool = henv.get("ResourcePool", "pool")
    owners = henv.get("ResourcePoolScaling", "s")["metadata"]["ownerReferences"]
    assert owners == [{"apiVersion": henv.api, "kind": "ResourcePool", "name": "pool",
                       "uid": pool["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]


def test_scaling_with_missing_pool_is_permanent_error_and_resumes(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.scaling("s", "later", 1)
    outcome = henv.reconcile("scaling", "s")
    assert isinstance(outcome, PermanentError) and outcome.reason == "PoolNotFound"
    henv.pool("later", minAvailable=0, provider={"name": "cm"})
    henv.reconcile("pool", "later")
    henv.reconcile("scaling", "s")
    henv.reconcile("pool", "later")
    henv.reconcile("scaling", "s")
    assert henv.get("ResourcePoolScaling", "s")["status"]["state"] == "done"


def test_unhealthy_scaling_handle_deleted_decrements_and_is_replaced(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.pool("pool", minAvailable=0, deleteUnhealthyResourceHandles=True, provider={"name": "cm"})
    henv.scaling("s", "pool", 1)
    _cycle(henv, "s")
    old = _scaling_handles(henv, "s")[0]["metadata"]["name"]
    henv.patch("ResourceHandle", old, {"status": {"healthy": False}}, status=True)
    henv.reconcile("pool", "pool")
    henv.reconcile("scaling", "s")
    henv.reconcile("pool", "pool")
    live = [h["metadata"]["name"] for h in _scaling_handles(henv, "s") if not h["metadata"].get("deletionTimestamp")]
    assert len(live) == 1 and old not in live

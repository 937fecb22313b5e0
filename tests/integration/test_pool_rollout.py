"""Pool rollover on devcluster (``spec.updateStrategy``): pool runs one at a time, handle readiness set by
hand in between (as the handle reconciler would), so each step of a rollout can be checked."""

from __future__ import annotations

from typing import Any

from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv

henv = support.henv  # the fixture


def _pool(henv: HandleEnv, **spec: Any) -> None:
    henv.configmap_provider("cm")
    spec.setdefault("provider", {"name": "cm", "parameterValues": {"x": 1}})
    henv.pool("pool", **spec)


def _ready_all(henv: HandleEnv) -> None:
    for handle in henv.pool_handles("pool"):
        if not (handle.get("status") or {}).get("ready"):
            henv.patch("ResourceHandle", handle["metadata"]["name"], {"status": {"ready": True, "healthy": True}},
                       status=True)


def _revision(henv: HandleEnv, handle: dict[str, Any]) -> str | None:
    return (handle["metadata"].get("annotations") or {}).get(f"{henv.d}/resource-pool-revision")


def _condition(henv: HandleEnv) -> dict[str, Any]:
    pool = henv.get("ResourcePool", "pool") or {}
    return next(c for c in pool["status"]["conditions"] if c["type"] == "UpToDate")


def _unbound(henv: HandleEnv) -> list[dict[str, Any]]:
    return [h for h in henv.pool_handles("pool") if not h["spec"].get("resourceClaim")]


def test_replace_rolls_every_unbound_handle_and_never_a_bound_one(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=4, updateStrategy={"type": "Replace", "maxUnavailable": 1, "maxSurge": 0})
    henv.reconcile("pool", "pool")
    _ready_all(henv)
    handles = henv.pool_handles("pool")
    first = _revision(henv, handles[0])
    assert first and {_revision(henv, h) for h in handles} == {first}
    henv.claim("c")
    bound = handles[0]
    henv.kube.patch_merge(henv.api, "ResourceHandle", bound["metadata"]["name"], henv.op, {
        "metadata": {"labels": henv.bound_labels("c")}, "spec": {"resourceClaim": henv.claim_ref("c")}})
    henv.reconcile("pool", "pool")
    _ready_all(henv)
    henv.reconcile("pool", "pool")
    assert _condition(henv)["status"] == "True"
    assert (henv.get("ResourcePool", "pool") or {})["status"]["resourceHandleCount"]["outdated"] == 0

    henv.patch("ResourcePool", "pool", {"spec": {"provider": {"parameterValues": {"x": 2}}}})
    for _ in range(12):
        henv.reconcile("pool", "pool")
        unbound = _unbound(henv)
        assert sum(1 for h in unbound if (h.get("status") or {}).get("ready")) >= 3, "below minAvailable - 1"
        assert len(unbound) <= 4, "maxSurge 0"
        _ready_all(henv)
        if all(h["spec"]["provider"]["parameterValues"]["x"] == 2 for h in unbound) and len(unbound) == 4:
            break
    henv.reconcile("pool", "pool")
    unbound = _unbound(henv)
    assert [h["spec"]["provider"]["parameterValues"]["x"] for h in unbound] == [2] * 4
    assert len({_revision(henv, h) for h in unbound} | {first}) == 2
    kept = henv.get_handle(bound["metadata"]["name"])
    assert kept and not kept["metadata"].get("deletionTimestamp") and _revision(henv, kept) == first
    pool = henv.get("ResourcePool", "pool") or {}
    assert pool["status"]["resourceHandleCount"]["updated"] == 4
    assert _condition(henv)["status"] == "True"
    reasons = [e["reason"] for e in henv.events("pool")]
    assert "RollingOut" in reasons and "RolloutComplete" in reasons


def test_a_provider_change_rolls_the_pool_too(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=2, updateStrategy={"type": "Replace", "maxUnavailable": 0, "maxSurge": 1})
    henv.reconcile("pool", "pool")
    _ready_all(henv)
    old = {h["metadata"]["name"] for h in henv.pool_handles("pool")}
    henv.patch("ResourceProvider", "cm", {"spec": {"vars": {"new": "yes"}}})
    henv.reconcile("pool", "pool")
    assert _condition(henv)["reason"] == "RollingOut"
    assert len(_unbound(henv)) == 3, "maxUnavailable 0: one new handle first"
    assert {h["metadata"]["name"] for h in _unbound(henv)} >= old
    for _ in range(8):
        _ready_all(henv)
        henv.reconcile("pool", "pool")
    names = {h["metadata"]["name"] for h in _unbound(henv)}
    assert len(names) == 2 and not names & old
    assert _condition(henv)["reason"] == "UpToDate"


def test_keep_leaves_outdated_handles_and_says_so(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=2)
    henv.reconcile("pool", "pool")
    old = {h["metadata"]["name"] for h in henv.pool_handles("pool")}
    henv.patch("ResourcePool", "pool", {"spec": {"provider": {"parameterValues": {"x": 2}}}})
    henv.reconcile("pool", "pool")
    henv.reconcile("pool", "pool")
    assert {h["metadata"]["name"] for h in henv.pool_handles("pool")} == old
    condition = _condition(henv)
    assert (condition["status"], condition["reason"]) == ("False", "Outdated")
    counts = (henv.get("ResourcePool", "pool") or {})["status"]["resourceHandleCount"]
    assert (counts["updated"], counts["outdated"]) == (0, 2)


def test_a_bad_strategy_is_a_condition_and_a_warning(henv: HandleEnv) -> None:
    _pool(henv, minAvailable=1, updateStrategy={"type": "Replace", "maxUnavailable": "lots"})
    outcome = henv.reconcile("pool", "pool")
    assert outcome is not None
    pool = henv.get("ResourcePool", "pool") or {}
    synced = next(c for c in pool["status"]["conditions"] if c["type"] == "Synced")
    assert (synced["status"], synced["reason"]) == ("False", "InvalidUpdateStrategy")
    assert "spec.updateStrategy.maxUnavailable" in synced["message"]
    assert any(e["reason"] == "InvalidUpdateStrategy" and e["type"] == "Warning" for e in henv.events("pool"))

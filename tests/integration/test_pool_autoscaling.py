"""Pool autoscaling on devcluster (``spec.autoscaling``): pool runs one at a time with a chosen ``now``,
handle readiness and binds set by hand (as the handle and claim reconcilers would)."""

from __future__ import annotations

from datetime import timedelta

from poolboy.context import utcnow
from poolboy.utils.timeutil import parse_timestamp
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv, ts

henv = support.henv  # the fixture


def _unbound(henv: HandleEnv) -> list[dict]:
    return [h for h in henv.pool_handles("pool") if not h["spec"].get("resourceClaim")]


def _condition(henv: HandleEnv) -> dict:
    pool = henv.get("ResourcePool", "pool") or {}
    return next(c for c in pool["status"]["conditions"] if c["type"] == "Autoscaled")


def test_demand_scales_the_pool_up_at_once_and_down_after_the_delay(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.pool("pool", minAvailable=1, provider={"name": "cm", "parameterValues": {}},
              autoscaling={"maxAvailable": 5, "window": "30m", "scaleDownDelay": "10m"})
    start = utcnow()
    henv.reconcile("pool", "pool", now=start)
    [first] = henv.pool_handles("pool")
    created = first["metadata"]["creationTimestamp"]
    ready_at = ts(parse_timestamp(created) + timedelta(seconds=120))  # 2 minutes to ready
    henv.patch("ResourceHandle", first["metadata"]["name"], {"status": {"ready": True, "conditions": [
        {"type": "Ready", "status": "True", "reason": "ResourcesReady", "message": "", "lastTransitionTime": ready_at}
    ]}}, status=True)
    henv.reconcile("pool", "pool", now=start)
    pool = henv.get("ResourcePool", "pool") or {}
    assert pool["status"]["timeToReadySeconds"] == 120
    assert pool["status"]["autoscaling"]["target"] == 1 and _condition(henv)["reason"] == "Steady"

    henv.claim("c")
    henv.kube.patch_merge(henv.api, "ResourceHandle", first["metadata"]["name"], henv.op, {
        "metadata": {"labels": henv.bound_labels("c")}, "spec": {"resourceClaim": henv.claim_ref("c")}})
    henv.reconcile("pool", "pool", now=start + timedelta(seconds=30))
    pool = henv.get("ResourcePool", "pool") or {}
    # one bind in the pool's first minute, 2 minutes to ready: mean 2 provisioning, 5 for 95 % (the ceiling)
    assert pool["status"]["autoscaling"]["target"] == 5
    assert len(_unbound(henv)) == 5
    assert any(e["reason"] == "ScaledUp" for e in henv.events("pool"))

    later = start + timedelta(minutes=40)  # the bind has left the window: the model asks for the floor
    henv.reconcile("pool", "pool", now=later)
    assert len(_unbound(henv)) == 5 and _condition(henv)["reason"] == "ScaleDownDelayed"
    henv.reconcile("pool", "pool", now=later + timedelta(minutes=10))
    unbound = _unbound(henv)
    assert len(unbound) == 1
    assert (henv.get("ResourcePool", "pool") or {})["status"]["autoscaling"]["target"] == 1
    assert any(e["reason"] == "ScaledDown" for e in henv.events("pool"))
    bound = henv.get_handle(first["metadata"]["name"])
    assert bound and not bound["metadata"].get("deletionTimestamp"), "a bound handle is never scaled down"


def test_a_bad_autoscaling_spec_is_a_condition(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.pool("pool", minAvailable=3, provider={"name": "cm", "parameterValues": {}},
              autoscaling={"maxAvailable": 2})
    henv.reconcile("pool", "pool")
    pool = henv.get("ResourcePool", "pool") or {}
    synced = next(c for c in pool["status"]["conditions"] if c["type"] == "Synced")
    assert (synced["status"], synced["reason"]) == ("False", "InvalidAutoscaling")


def test_a_learned_period_makes_handles_ahead_of_a_recurring_burst(henv: HandleEnv) -> None:
    """``period: 24h``: a bind at 9:00 one day makes the pool grow before 9:00 the next, while the measured rate is
    nothing, and it says why."""
    henv.configmap_provider("cm")
    henv.pool("pool", minAvailable=1, provider={"name": "cm", "parameterValues": {}},
              autoscaling={"maxAvailable": 5, "window": "30m", "scaleDownDelay": "10m", "period": "24h"})
    today = utcnow().replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    nine = today + timedelta(hours=9)
    henv.reconcile("pool", "pool", now=nine - timedelta(hours=1))
    [first] = henv.pool_handles("pool")
    ready_at = ts(parse_timestamp(first["metadata"]["creationTimestamp"]) + timedelta(minutes=15))
    henv.patch("ResourceHandle", first["metadata"]["name"], {"status": {"ready": True, "conditions": [
        {"type": "Ready", "status": "True", "reason": "ResourcesReady", "message": "", "lastTransitionTime": ready_at}
    ]}}, status=True)
    henv.reconcile("pool", "pool", now=nine - timedelta(hours=1))
    assert (henv.get("ResourcePool", "pool") or {})["status"]["timeToReadySeconds"] == 900

    henv.claim("c")  # the day's one claim, at 9:00
    henv.kube.patch_merge(henv.api, "ResourceHandle", first["metadata"]["name"], henv.op, {
        "metadata": {"labels": henv.bound_labels("c")}, "spec": {"resourceClaim": henv.claim_ref("c")}})
    henv.reconcile("pool", "pool", now=nine + timedelta(minutes=1))
    henv.reconcile("pool", "pool", now=nine + timedelta(minutes=16))  # the 9:00 bucket has ended: learned
    henv.reconcile("pool", "pool", now=nine + timedelta(hours=2))
    henv.reconcile("pool", "pool", now=nine + timedelta(hours=2, minutes=11))
    status = (henv.get("ResourcePool", "pool") or {})["status"]["autoscaling"]
    assert status["target"] == 1 and len(_unbound(henv)) == 1, status
    assert status["profile"]["period"] == "1d" and sum(status["profile"]["counts"]) == 1

    henv.reconcile("pool", "pool", now=nine + timedelta(days=1, minutes=-10))  # 8:50 the next day
    status = (henv.get("ResourcePool", "pool") or {})["status"]["autoscaling"]
    # the next 15 minutes (the time to ready) overlap a third of yesterday's 9:00 bucket: 1/3 claim expected, and
    # P(Poisson(1/3) ≤ 1) ≥ 95 %: 2 handles
    assert status["claimsPerHour"] == 0 and status["expectedPerHour"] == 1.3, status
    assert status["target"] == 2 and len(_unbound(henv)) == 2, status
    assert "expected from the learned 1d profile" in _condition(henv)["message"]
    assert any(e["reason"] == "ScaledUp" and "expected" in e["message"] for e in henv.events("pool"))

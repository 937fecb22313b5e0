"""Demand-driven pool sizing on the running stack (issue 20, ``spec.autoscaling``), as an administrator sees it:
handles take several seconds to become ready, a burst of claims raises the pool's target above ``minAvailable``
(``status.autoscaling``, an Event ``ScaledUp``; the claims that found the pool empty count as demand, ``missed``),
and once the burst has left the demand window and the ``scaleDownDelay`` has passed, the pool shrinks back to its
floor (``ScaledDown``) without touching a bound handle.
"""

from __future__ import annotations

from stack.local import LocalStack
from tests.e2e.provider_support import NS, User, condition, config_map_provider, status
from tests.waiting import wait_for

#: a ConfigMap is "ready" 6 s after it was created (the handle sweep re-checks it every 5 s here)
SLOW_READY = ("(now(true) - (metadata.creationTimestamp | to_datetime('%Y-%m-%dT%H:%M:%S%z')))"
              ".total_seconds() > 6")


def unbound(user: User) -> list[dict]:
    return [h for h in user.pool_handles("pool-auto") if not h["metadata"].get("deletionTimestamp")]


def autoscaling_status(user: User) -> dict:
    return status(user.get_pool("pool-auto")).get("autoscaling") or {}


def test_a_burst_raises_the_target_and_the_pool_shrinks_after_the_window_and_delay(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("auto")
    user.provider("p-auto", config_map_provider(ns, readinessCheck=SLOW_READY))
    user.pool("pool-auto", {"minAvailable": 1, "provider": {"name": "p-auto", "parameterValues": {}},
                            "autoscaling": {"maxAvailable": 6, "window": "1m", "scaleDownDelay": "20s"}})
    wait_for(lambda: status(user.get_pool("pool-auto")).get("timeToReadySeconds", 0) >= 5, timeout=60,
             interval=0.5, message="the pool measured its handles' time to ready")
    assert autoscaling_status(user)["target"] == 1

    names = [f"c{index:02d}" for index in range(12)]
    for name in names:  # a burst: 12 claims at once against a pool of 1
        user.claim(ns, name, {"provider": {"name": "p-auto", "parameterValues": {}}})
    for name in names:
        user.wait_bound(ns, name, timeout=60)
    wait_for(lambda: autoscaling_status(user).get("target", 0) >= 3, timeout=30, interval=0.5,
             message=f"the target rose (last {autoscaling_status(user)})")
    peak = autoscaling_status(user)
    print(f"autoscaling at the burst: {peak}")
    # the pool had 1 handle for 12 claims: most got a handle made for them, and the pool counts them as demand
    assert peak.get("missed", 0) >= 3, peak
    wait_for(lambda: len(unbound(user)) >= 3, timeout=30, interval=0.5, message="the pool grew beyond its floor")
    scaled = condition(user.get_pool("pool-auto") or {}, "Autoscaled")
    assert scaled["status"] == "True" and "claim rate" in scaled["message"]
    wait_for(lambda: "ScaledUp" in {e.reason for e in user.events(NS, "pool-auto")}, timeout=15, interval=0.2,
             message="Event ScaledUp on the pool")

    bound = {user.get_claim(ns, name)["status"]["resourceHandle"]["name"] for name in names}
    wait_for(lambda: autoscaling_status(user).get("target") == 1 and len(unbound(user)) == 1, timeout=180,
             interval=1, message=f"back to the floor after the window and the delay (last {autoscaling_status(user)})")
    wait_for(lambda: "ScaledDown" in {e.reason for e in user.events(NS, "pool-auto")}, timeout=15, interval=0.2,
             message="Event ScaledDown on the pool")
    for name in bound:
        handle = user.get_handle(name)
        assert handle is not None and not handle["metadata"].get("deletionTimestamp"), f"bound {name} was touched"

"""Demand-driven pool sizing on the running stack (``spec.autoscaling``), as an administrator sees it:
handles take several seconds to become ready, a burst of claims raises the pool's target above ``minAvailable``
(``status.autoscaling``, an Event ``ScaledUp``; the claims that found the pool empty count as demand, ``missed``),
and once the burst has left the demand window and the ``scaleDownDelay`` has passed, the pool shrinks back to its
floor (``ScaledDown``) without touching a bound handle. With a ``period``, the pool learns when a burst came and
grows ahead of it the next period, before any claim of that period arrives.
"""

from __future__ import annotations

import time

from stack.local import LocalStack
from tests.e2e.provider_support import NS, User, condition, config_map_provider, status
from tests.waiting import wait_for

#: a ConfigMap is "ready" 6 s after it was created (the handle sweep re-checks it every 5 s here)
SLOW_READY = ("(now(true) - (metadata.creationTimestamp | to_datetime('%Y-%m-%dT%H:%M:%S%z')))"
              ".total_seconds() > 6")


#: the learned period, in seconds and as the pool writes it: near the shortest a pool accepts (96 s), so that the test
#: waits for one period and no more
PERIOD, PERIOD_TEXT = 100, "1m40s"


def unbound(user: User, pool: str = "pool-auto") -> list[dict]:
    return [h for h in user.pool_handles(pool) if not h["metadata"].get("deletionTimestamp")]


def autoscaling_status(user: User, pool: str = "pool-auto") -> dict:
    return status(user.get_pool(pool)).get("autoscaling") or {}


def test_a_burst_raises_the_target_and_the_pool_shrinks_after_the_window_and_delay(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("auto")
    user.provider("p-auto", config_map_provider(ns, readinessCheck=SLOW_READY))
    user.pool("pool-auto", {"minAvailable": 1, "provider": {"name": "p-auto", "parameterValues": {}},
                            "autoscaling": {"maxAvailable": 6, "window": "30s", "scaleDownDelay": "10s"}})
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


def test_a_learned_period_grows_the_pool_ahead_of_the_burst_it_saw_one_period_before(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("season")
    user.provider("p-season", config_map_provider(ns, readinessCheck=SLOW_READY))
    user.pool("pool-season", {"minAvailable": 1, "provider": {"name": "p-season", "parameterValues": {}},
                              "autoscaling": {"maxAvailable": 4, "window": "10s", "scaleDownDelay": "5s",
                                              "period": PERIOD_TEXT}})
    wait_for(lambda: status(user.get_pool("pool-season")).get("timeToReadySeconds", 0) >= 5, timeout=60,
             interval=0.5, message="the pool measured its handles' time to ready")
    burst_at = time.time()
    names = [f"s{index}" for index in range(5)]
    for name in names:  # the period's burst: 5 claims at once against a pool of 1
        user.claim(ns, name, {"provider": {"name": "p-season", "parameterValues": {}}})
    for name in names:
        user.wait_bound(ns, name, timeout=60)
    wait_for(lambda: autoscaling_status(user, "pool-season").get("target", 0) >= 2, timeout=30, interval=0.5,
             message="the measured rate raised the target")
    # the burst leaves the 10 s window and the 5 s delay passes: back to the floor, nothing expected yet
    wait_for(lambda: autoscaling_status(user, "pool-season").get("target") == 1, timeout=60, interval=0.5,
             message=f"back to the floor after the burst (last {autoscaling_status(user, 'pool-season')})")
    assert time.time() < burst_at + PERIOD - 20, "the test is too slow to see the next period before its burst"

    # the next period, before the time of the burst: no claim arrives, yet the pool grows for the one it expects
    def grown() -> bool:
        return autoscaling_status(user, "pool-season").get("target", 0) >= 3 and \
            len(unbound(user, "pool-season")) >= 3

    wait_for(grown, timeout=burst_at + PERIOD - time.time(), interval=0.5,
             message=f"grown before the recurring burst (last {autoscaling_status(user, 'pool-season')})")
    assert time.time() < burst_at + PERIOD
    seen = autoscaling_status(user, "pool-season")
    print(f"autoscaling before the recurring burst: {seen}")
    assert seen["claimsPerHour"] == 0 and seen["expectedPerHour"] > 0, seen
    assert sum(seen["profile"]["counts"]) >= len(names), seen
    message = condition(user.get_pool("pool-season") or {}, "Autoscaled")["message"]
    assert f"expected from the learned {PERIOD_TEXT} profile" in message, message

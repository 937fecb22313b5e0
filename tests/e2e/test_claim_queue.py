"""A waiting claim says where it stands, on the running stack: claims that may not create a handle
(``disableCreation``) show what they wait for and their position in the queue in ``Bound=False`` and
``status.queue``; when older claims are served, the others move up within the refresh interval."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import NS, V1, D, User, condition, config_map_provider, status
from tests.waiting import wait_for

INTERVAL = 10  # POOLBOY_QUEUE_STATUS_INTERVAL here, so the test sees a refresh in seconds


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_QUEUE_STATUS_INTERVAL": str(INTERVAL)}
    with LocalStack(e2e_options(workers=1, concurrency=2, env=env)) as running:
        yield running


def places(user: User, ns: str, names: list[str]) -> dict[str, int | None]:
    """``name → position`` from each claim's ``status.queue`` (None once bound or not yet written). The queue's
    length is written with the position, and only rewritten when the position changes."""
    result: dict[str, int | None] = {}
    for name in names:
        queue = status(user.get_claim(ns, name)).get("queue")
        result[name] = queue["position"] if queue else None
    return result


def test_waiting_claims_show_their_place_and_move_up_as_older_ones_are_served(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("queue")
    user.provider("p-queue", config_map_provider(ns, disableCreation=True))
    user.pool("pool-queue", {"minAvailable": 0, "provider": {"name": "p-queue", "parameterValues": {}}})
    names = [f"c{index}" for index in range(5)]
    for name in names:  # one client in order: creation order == name order (whole-second timestamps tie: rank)
        user.claim(ns, name, {"provider": {"name": "p-queue", "parameterValues": {}}})

    expected = {name: index + 1 for index, name in enumerate(names)}
    wait_for(lambda: places(user, ns, names) == expected, timeout=30, interval=0.5,
             message=f"positions 1..5 (last: {places(user, ns, names)})")
    for index, name in enumerate(names):
        bound = condition(user.get_claim(ns, name) or {}, "Bound")
        assert (bound["status"], bound["reason"]) == ("False", "NoMatchingHandle")
        assert bound["message"].startswith(
            f"Waiting for a ResourceHandle of ResourceProvider p-queue: position {index + 1} of ")
    assert status(user.get_claim(ns, "c4"))["queue"]["waiting"] == 5

    # two extra pool handles, once: the two oldest claims are served, the other three move up
    user.custom.create_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", {
        "apiVersion": V1, "kind": "ResourcePoolScaling", "metadata": {"name": "queue-2", "namespace": NS},
        "spec": {"resourcePool": {"name": "pool-queue"}, "count": 2}})
    for name in names[:2]:
        user.wait_bound(ns, name, timeout=30)
    moved = {"c2": 1, "c3": 2, "c4": 3}
    wait_for(lambda: {n: places(user, ns, [n])[n] for n in moved} == moved, timeout=INTERVAL + 20, interval=0.5,
             message=f"positions 1..3 within the refresh interval (last: {places(user, ns, names)})")
    assert places(user, ns, names[:2]) == {"c0": None, "c1": None}, "a bound claim has no queue status"
    assert "position 1 of 3" in condition(user.get_claim(ns, "c2") or {}, "Bound")["message"]

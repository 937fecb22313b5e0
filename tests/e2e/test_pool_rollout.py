"""Rollover of a pool's outdated handles on the running stack (``spec.updateStrategy``), as an
administrator sees it: a 20-handle pool with ``maxUnavailable: 2`` whose parameter values change is replaced
handle by handle while a watch on its handles counts the ready unbound ones after every event, two bound handles
stay as they were, and ``kubectl wait --for=condition=UpToDate`` returns when the rollout is done.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import watch

from stack.local import LocalStack
from tests.e2e.provider_support import NS, D, User, condition, config_map_provider, kubectl, status
from tests.waiting import wait_for

pytestmark = [pytest.mark.kubectl]

REVISION = f"{D}/resource-pool-revision"


class ReadyUnbound:
    """Ready, unbound, not deleting handles of one pool, counted after every watch event (list, then watch from
    the list's resourceVersion, so no event is missed)."""

    def __init__(self, user: User, pool: str) -> None:
        self.user, self.selector = user, f"{D}/resource-pool-name={pool}"
        self.state: dict[str, bool] = {}
        self.counts: list[int] = []
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _ready_unbound(handle: dict[str, Any]) -> bool:
        return bool(status(handle).get("ready") is True and not handle["spec"].get("resourceClaim")
                    and not handle["metadata"].get("deletionTimestamp"))

    def start(self) -> None:
        listed = self.user.custom.list_namespaced_custom_object(D, "v1", NS, "resourcehandles",
                                                                label_selector=self.selector)
        for handle in listed["items"]:
            self.state[handle["metadata"]["name"]] = self._ready_unbound(handle)
        self.counts.append(sum(self.state.values()))
        self._version = listed["metadata"]["resourceVersion"]
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        stream = watch.Watch()
        while not self._stop.is_set():
            for event in stream.stream(self.user.custom.list_namespaced_custom_object, D, "v1", NS,
                                       "resourcehandles", label_selector=self.selector,
                                       resource_version=self._version, timeout_seconds=5):
                handle = event["object"]
                self._version = handle["metadata"]["resourceVersion"]
                name = handle["metadata"]["name"]
                self.seen.add(name)
                self.state[name] = event["type"] != "DELETED" and self._ready_unbound(handle)
                self.counts.append(sum(self.state.values()))
                if self._stop.is_set():
                    return


def ready_unbound(user: User, pool: str) -> list[dict[str, Any]]:
    return [h for h in user.pool_handles(pool)
            if status(h).get("ready") is True and not h["metadata"].get("deletionTimestamp")]


def test_a_20_handle_pool_rolls_over_with_at_least_18_ready_and_bound_handles_untouched(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("rollout")
    user.provider("p-roll", config_map_provider(ns))
    user.pool("pool-roll", {"minAvailable": 20, "provider": {"name": "p-roll", "parameterValues": {}},
                            "updateStrategy": {"type": "Replace", "maxUnavailable": 2}})
    wait_for(lambda: len(ready_unbound(user, "pool-roll")) == 20, timeout=120, interval=0.5,
             message="20 ready unbound handles")
    for index in range(2):
        user.claim(ns, f"c{index}", {"provider": {"name": "p-roll", "parameterValues": {}}})
    bound = {user.wait_bound(ns, f"c{index}", timeout=60)["status"]["resourceHandle"]["name"] for index in range(2)}
    assert all(REVISION in (user.get_handle(name) or {})["metadata"]["annotations"] for name in bound)
    wait_for(lambda: len(ready_unbound(user, "pool-roll")) == 20, timeout=120, interval=0.5,
             message="20 ready unbound handles")
    bound_before = {name: user.get_handle(name) for name in bound}
    old = {h["metadata"]["name"] for h in user.pool_handles("pool-roll")}
    assert len(old) == 20

    counter = ReadyUnbound(user, "pool-roll")
    counter.start()
    try:
        user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", "pool-roll",
                                                   {"spec": {"provider": {"parameterValues": {"greeting": "hi"}}}})
        waited = kubectl(stack, "wait", "--for=condition=UpToDate", "--timeout=240s", "-n", NS,
                         "resourcepool/pool-roll", timeout=250)
        assert waited.returncode == 0, f"kubectl wait: {waited.stderr}\n{stack.logs()}"
        wait_for(lambda: len(ready_unbound(user, "pool-roll")) == 20, timeout=60, interval=0.5,
                 message="20 ready unbound handles after the rollout")
    finally:
        counter.stop()

    handles = [h for h in user.pool_handles("pool-roll") if not h["metadata"].get("deletionTimestamp")]
    names = {h["metadata"]["name"] for h in handles}
    assert not names & old, "every unbound handle was replaced"
    assert all(h["spec"]["provider"]["parameterValues"] == {"greeting": "hi"} for h in handles)
    assert len({h["metadata"]["annotations"][REVISION] for h in handles}) == 1
    assert min(counter.counts) >= 18, f"ready unbound handles fell to {min(counter.counts)}"
    print(f"rollout: {len(counter.counts)} handle events, ready unbound between {min(counter.counts)} and "
          f"{max(counter.counts)}, {len(counter.seen - old - bound)} handles made")
    for name, before in bound_before.items():
        after = user.get_handle(name)
        assert after is not None and not after["metadata"].get("deletionTimestamp")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert after["spec"] == before["spec"], "a bound handle's spec changed"
        assert after["metadata"]["annotations"][REVISION] == before["metadata"]["annotations"][REVISION]
    pool = user.get_pool("pool-roll") or {}
    counts = status(pool)["resourceHandleCount"]
    assert (counts["updated"], counts["outdated"]) == (20, 0)
    assert condition(pool, "UpToDate")["reason"] == "UpToDate"
    # Events are sent off the reconcile's path (and yield to the runs of a busy worker): wait for them
    wait_for(lambda: {"RollingOut", "RolloutComplete"} <= {e.reason for e in user.events(NS, "pool-roll")},
             timeout=15, interval=0.2, message="Events RollingOut and RolloutComplete on the pool")

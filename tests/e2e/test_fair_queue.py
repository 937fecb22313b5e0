"""Shared pools that stay fair, as users and administrators see them on the running stack: a pool or provider's
``spec.queue`` serves waiting claims by fair share across namespaces, caps what one namespace holds (waiting or
refused), orders by priority that rises with the wait, and bounds how long a claim may queue (fail, or get a handle
made). Claims wait because creation is disabled, as on a shared lab platform."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import NS, V1, D, User, condition, config_map_provider, parse, status
from tests.waiting import wait_for

INTERVAL = 3  # POOLBOY_QUEUE_STATUS_INTERVAL here: positions are rewritten within seconds


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_QUEUE_STATUS_INTERVAL": str(INTERVAL)}
    with LocalStack(e2e_options(workers=1, concurrency=2, env=env)) as running:
        yield running


@pytest.fixture()
def user(stack: LocalStack) -> User:
    return User(stack)


def lab(user: User, queue: dict[str, Any], *, min_available: int = 0, provider_queue: bool = False,
        **provider: Any) -> tuple[str, str]:
    """A provider that never creates for claims and a pool of it with ``queue`` on the pool (or on the provider):
    ``(provider, pool)`` names, unique to the test."""
    suffix = uuid.uuid4().hex[:5]
    provider_name, pool_name = f"lab-{suffix}", f"labs-{suffix}"
    spec = config_map_provider(user.namespace("cms"), disableCreation=True, **provider)
    if provider_queue:
        spec["queue"] = queue
    user.provider(provider_name, spec)
    pool: dict[str, Any] = {"minAvailable": min_available, "provider": {"name": provider_name,
                                                                         "parameterValues": {}}}
    if not provider_queue:
        pool["queue"] = queue
    user.pool(pool_name, pool)
    return provider_name, pool_name


def claim(user: User, namespace: str, name: str, pool: str, provider: str,
          labels: dict[str, str] | None = None) -> None:
    user.claim(namespace, name, {"provider": {"name": provider, "parameterValues": {}}},
               {"annotations": {f"{D}/resource-pool-name": pool}, "labels": labels or {}})


def add_handles(user: User, pool: str, count: int) -> None:
    user.custom.create_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", {
        "apiVersion": V1, "kind": "ResourcePoolScaling",
        "metadata": {"name": f"{pool}-{uuid.uuid4().hex[:5]}", "namespace": NS},
        "spec": {"resourcePool": {"name": pool}, "count": count}})


def position(user: User, namespace: str, name: str) -> int | None:
    return (status(user.get_claim(namespace, name)).get("queue") or {}).get("position")


def bound_names(user: User, claims: list[tuple[str, str]]) -> set[str]:
    return {name for ns, name in claims if status(user.get_claim(ns, name)).get("resourceHandle")}


def wait_positions(user: User, expected: dict[tuple[str, str], int], timeout: float = 30) -> None:
    def current() -> dict[tuple[str, str], int | None]:
        return {key: position(user, *key) for key in expected}

    wait_for(lambda: current() == expected, timeout=timeout, interval=0.5,
             message=f"positions {expected} (last: {current()})")


def test_fair_share_gives_a_namespace_with_one_claim_a_handle_before_a_heavy_namespaces_second(user: User) -> None:
    provider, pool = lab(user, {"order": "FairShare"})
    heavy, light = user.namespace("heavy"), user.namespace("light")
    for index in range(4):
        claim(user, heavy, f"h{index}", pool, provider)
    wait_positions(user, {(heavy, f"h{index}"): index + 1 for index in range(4)})
    claim(user, light, "l0", pool, provider)  # filed last, but its namespace holds nothing
    wait_positions(user, {(heavy, "h0"): 1, (light, "l0"): 2, (heavy, "h1"): 3, (heavy, "h3"): 5})
    message = condition(user.get_claim(light, "l0") or {}, "Bound")["message"]
    assert message.startswith(f"Waiting for a ResourceHandle of ResourcePool {pool}: position 2 of 5 (fair share: "
                              f"namespace {light} holds 0)"), message
    assert status(user.get_claim(light, "l0"))["queue"]["order"] == "FairShare"

    add_handles(user, pool, 2)
    everyone = [(heavy, f"h{index}") for index in range(4)] + [(light, "l0")]
    wait_for(lambda: bound_names(user, everyone) == {"h0", "l0"}, timeout=60, interval=0.5,
             message=f"h0 and l0 bound (last: {bound_names(user, everyone)})")
    # the heavy namespace now holds one handle, the light one too: h1 is next, then h2, h3
    wait_positions(user, {(heavy, "h1"): 1, (heavy, "h2"): 2, (heavy, "h3"): 3})
    assert bound_names(user, everyone) == {"h0", "l0"}, "no claim bound beyond the handles there are"


def second_claim_over_a_cap_of_one(user: User, pool: str, provider: str, prefix: str) -> str:
    """A fresh namespace whose claim ``first`` is bound and whose claim ``second`` is then filed; its name."""
    ns = user.namespace(prefix)
    claim(user, ns, "first", pool, provider)
    user.wait_bound(ns, "first", timeout=60)
    claim(user, ns, "second", pool, provider)
    return ns


def test_a_namespace_over_its_cap_waits_with_the_cap_and_binds_when_one_of_its_claims_goes(user: User) -> None:
    provider, pool = lab(user, {"maxPerNamespace": 1}, min_available=2, provider_queue=True)
    ns = second_claim_over_a_cap_of_one(user, pool, provider, "capped")
    waiting = user.wait_claim(ns, "second", lambda c: condition(c, "Bound").get("reason") == "NamespaceCap",
                              timeout=30, message="waiting over the cap")
    message = condition(waiting, "Bound")["message"]
    assert f"namespace {ns} holds 1 of at most 1 at once (maxPerNamespace)" in message, message
    assert status(waiting)["queue"]["namespaceCap"] == 1 and "position" not in status(waiting)["queue"]
    other = user.namespace("other")
    claim(user, other, "mine", pool, provider)
    user.wait_bound(other, "mine", timeout=60)  # another namespace is not held up by the capped one

    user.delete_claim(ns, "first")
    user.wait_bound(ns, "second", timeout=60)


def test_refuse_over_the_cap_answers_at_once_and_stays_refused(user: User) -> None:
    provider, pool = lab(user, {"maxPerNamespace": 1, "overCap": "Refuse"}, min_available=2)
    ns = second_claim_over_a_cap_of_one(user, pool, provider, "refused")
    refused = user.wait_claim(ns, "second", lambda c: condition(c, "Bound").get("reason") == "NamespaceCapRefused",
                              timeout=30, message="refused over the cap")
    assert "holds 1 of at most 1" in condition(refused, "Bound")["message"]
    wait_for(lambda: [e for e in user.events(ns, "second") if e.reason == "NamespaceCapRefused"
                      and e.type == "Warning"], timeout=15, interval=0.5, message="a Warning Event")
    assert f"{D}/resource-claim-waiting" not in (refused["metadata"].get("labels") or {}), "not in the queue"

    user.delete_claim(ns, "first")
    user.wait_gone(ns, "first", timeout=30)
    third = user.namespace("third")  # a claim that binds proves the pool was looked at since
    claim(user, third, "later", pool, provider)
    user.wait_bound(third, "later", timeout=60)
    assert condition(user.get_claim(ns, "second") or {}, "Bound")["reason"] == "NamespaceCapRefused"
    assert not status(user.get_claim(ns, "second")).get("resourceHandle")


def test_priority_serves_urgent_claims_first_and_a_long_wait_outranks_it(user: User) -> None:
    provider, pool = lab(user, {"priority": {"classes": {"urgent": 5}, "agingInterval": "1s"}})
    ns = user.namespace("prio")
    claim(user, ns, "patient", pool, provider)
    user.wait_claim(ns, "patient", lambda c: position(user, ns, "patient") == 1, timeout=30, message="queued")
    created = parse((user.get_claim(ns, "patient") or {})["metadata"]["creationTimestamp"])
    # the patient claim ages past the urgent class (5 levels, one per second waited), with room to spare
    wait_for(lambda: datetime.now(UTC) - created >= timedelta(seconds=8), timeout=30, interval=0.5,
             message="8 s of waiting")
    claim(user, ns, "urgent", pool, provider, labels={f"{D}/priority": "urgent"})
    claim(user, ns, "plain", pool, provider)
    wait_positions(user, {(ns, "patient"): 1, (ns, "urgent"): 2, (ns, "plain"): 3})
    assert "(priority " in condition(user.get_claim(ns, "urgent") or {}, "Bound")["message"]

    add_handles(user, pool, 2)
    claims = [(ns, "patient"), (ns, "urgent"), (ns, "plain")]
    wait_for(lambda: bound_names(user, claims) == {"patient", "urgent"}, timeout=60, interval=0.5,
             message=f"patient and urgent bound, plain waits (last: {bound_names(user, claims)})")


def test_a_claim_past_the_longest_wait_fails_with_queue_timeout(user: User) -> None:
    provider, pool = lab(user, {"maxWait": "5s"})
    ns = user.namespace("timeout")
    claim(user, ns, "slow", pool, provider)
    user.wait_claim(ns, "slow", lambda c: condition(c, "Bound").get("reason") == "NoMatchingHandle", timeout=30,
                    message="waiting first")
    failed = user.wait_claim(ns, "slow", lambda c: condition(c, "Bound").get("reason") == "QueueTimeout",
                             timeout=30, message="QueueTimeout")
    assert "maxWait 5s" in condition(failed, "Bound")["message"]
    assert "queue" not in status(failed)
    wait_for(lambda: [e for e in user.events(ns, "slow") if e.reason == "QueueTimeout" and e.type == "Warning"],
             timeout=15, interval=0.5, message="a Warning Event")


def test_a_claim_past_the_longest_wait_gets_a_handle_made_where_creation_is_allowed(user: User) -> None:
    suffix = uuid.uuid4().hex[:5]
    provider, pool = f"open-{suffix}", f"open-pool-{suffix}"
    spec = config_map_provider(user.namespace("cms"))
    spec["queue"] = {"maxWait": "5s", "onTimeout": "CreateHandle"}
    user.provider(provider, spec)
    user.pool(pool, {"minAvailable": 0, "provider": {"name": provider, "parameterValues": {}}})
    ns = user.namespace("fallback")
    user.claim(ns, "prefer-pool", {"provider": {"name": provider, "parameterValues": {}}, "disableCreation": True},
               {"annotations": {f"{D}/resource-pool-name": pool}})
    user.wait_claim(ns, "prefer-pool", lambda c: condition(c, "Bound").get("reason") == "NoMatchingHandle",
                    timeout=30, message="waiting for a pool handle first")
    made = user.wait_bound(ns, "prefer-pool", timeout=30)
    handle = user.get_handle(status(made)["resourceHandle"]["name"])
    assert handle is not None and f"{D}/resource-pool-name" not in (handle["metadata"].get("labels") or {}), \
        "a handle made for the claim, not one of the pool's"


def test_a_queue_policy_the_operator_cannot_use_shows_on_the_pool_and_claims_wait_oldest_first(user: User) -> None:
    provider, pool = lab(user, {"maxWait": "0s"})  # passes the schema's pattern, but a wait must be positive
    wait_for(lambda: condition(user.get_pool(pool) or {}, "Synced").get("reason") == "InvalidQueue", timeout=30,
             interval=0.5, message="Synced=False InvalidQueue on the pool")
    assert "spec.queue.maxWait: must be positive" in condition(user.get_pool(pool) or {}, "Synced")["message"]
    ns = user.namespace("invalid")
    claim(user, ns, "c0", pool, provider)
    waiting = user.wait_claim(ns, "c0", lambda c: condition(c, "Bound").get("reason") == "NoMatchingHandle",
                              timeout=30, message="waiting oldest first")
    assert "The queue policy is not used" in condition(waiting, "Bound")["message"]


def test_a_namespace_weighted_twice_gets_twice_the_share(user: User) -> None:
    provider, pool = lab(user, {"order": "FairShare", "namespaceWeightKey": "example.com/lab-share"})
    light, heavy = user.namespace("weight1"), user.namespace("weight2")
    user.core.patch_namespace(heavy, {"metadata": {"labels": {"example.com/lab-share": "2"}}})  # the administrator
    for index in range(3):
        claim(user, light, f"b{index}", pool, provider)
    wait_positions(user, {(light, f"b{index}"): index + 1 for index in range(3)})
    for index in range(3):
        claim(user, heavy, f"a{index}", pool, provider)
    # shares once served: a0 0.5, b0 1 (older than a1), a1 1, a2 1.5, b1 2, b2 3
    wait_positions(user, {(heavy, "a0"): 1, (light, "b0"): 2, (heavy, "a1"): 3, (heavy, "a2"): 4, (light, "b1"): 5,
                          (light, "b2"): 6})
    assert user.get_pool(pool) is not None
    wait_for(lambda: (status(user.get_pool(pool)).get("queue") or {}).get("waiting") == 6, timeout=30, interval=0.5,
             message="the pool counts its queue")
    rows = {row["namespace"]: row for row in status(user.get_pool(pool))["queue"]["namespaces"]}
    assert (rows[light]["waiting"], rows[light]["bound"], rows[heavy]["waiting"]) == (3, 0, 3)

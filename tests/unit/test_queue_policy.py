"""Queue policies (``spec.queue``) as an administrator writes them, and the order they serve waiting claims in:
oldest first by default, fair share across namespaces (weighted), caps per namespace, priority with aging."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from poolboy.domain.binding import queue as claim_queue
from poolboy.domain.binding import queue_order, queue_policy
from poolboy.domain.binding.queue_order import Waiter
from poolboy.domain.binding.queue_policy import OnTimeout, Order, OverCap

NOW = 1_000_000.0
WRITTEN = datetime(2026, 12, 1, tzinfo=UTC)


def policy(**raw: object) -> queue_policy.QueuePolicy:
    return queue_policy.parse(raw, "ResourcePool labs")


def served(waiters: list[Waiter], bound: dict[str, int], chosen: queue_policy.QueuePolicy,
           weights: dict[str, float] | None = None, now: float = NOW) -> list[str]:
    """``namespace/name`` of the claims with a position, in the order they are served."""
    return [f"{s.waiter.namespace}/{s.waiter.name}"
            for s in queue_order.order(waiters, bound, weights or {}, chosen, now) if not s.capped]


def test_no_policy_is_upstreams_oldest_first() -> None:
    chosen = queue_policy.parse(None, "ResourcePool labs")
    assert chosen.is_fifo and chosen.order is Order.FIFO and chosen.max_wait is None
    waiters = [Waiter("b", "late", NOW - 10), Waiter("a", "early", NOW - 20)]
    assert served(waiters, {"a": 5}, chosen) == ["a/early", "b/late"]


@pytest.mark.parametrize(("raw", "field"), [
    ({"order": "Random"}, "spec.queue.order"),
    ({"maxPerNamespace": 0}, "spec.queue.maxPerNamespace"),
    ({"maxPerNamespace": True}, "spec.queue.maxPerNamespace"),
    ({"overCap": "Drop"}, "spec.queue.overCap"),
    ({"maxWait": "soon"}, "spec.queue.maxWait"),
    ({"maxWait": "0s"}, "spec.queue.maxWait"),
    ({"onTimeout": "Delete"}, "spec.queue.onTimeout"),
    ({"priority": {"classes": {"high": "ten"}}}, "spec.queue.priority.classes"),
    ({"priority": {"agingInterval": "often"}}, "spec.queue.priority.agingInterval"),
    ({"namespaceWeightKey": ""}, "spec.queue.namespaceWeightKey"),
])
def test_a_wrong_policy_names_the_field(raw: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field.replace('.', '[.]')}: "):
        queue_policy.parse(raw, "ResourcePool labs")


def test_every_field_parses() -> None:
    chosen = policy(order="FairShare", namespaceWeightKey="example.com/share", maxPerNamespace=3, overCap="Refuse",
                    priority={"classes": {"high": 10}, "default": -1, "agingInterval": "5m"}, maxWait="2h",
                    onTimeout="CreateHandle")
    assert (chosen.order, chosen.weight_key, chosen.max_per_namespace, chosen.over_cap, chosen.max_wait,
            chosen.on_timeout) == (Order.FAIR_SHARE, "example.com/share", 3, OverCap.REFUSE, timedelta(hours=2),
                                   OnTimeout.CREATE_HANDLE)
    assert chosen.priority is not None and chosen.priority.aging_interval == timedelta(minutes=5)
    assert not chosen.is_fifo


def test_fair_share_serves_the_namespace_that_holds_fewest_first() -> None:
    heavy = [Waiter("heavy", f"h{i}", NOW - 100 + i) for i in range(5)]
    light = Waiter("light", "l0", NOW - 1)  # filed last
    order = served([*heavy, light], {"heavy": 4, "light": 0}, policy(order="FairShare"))
    assert order[0] == "light/l0"
    assert order[1:] == [f"heavy/h{i}" for i in range(5)], "oldest first inside a namespace"


def test_fair_share_gives_n_waiting_namespaces_about_one_nth_each() -> None:
    """Serve 30 handles one at a time, re-ordering after each (as binds do): each of 3 namespaces that keep claims
    waiting gets 10, whatever their appetite."""
    appetite = {"a": 50, "b": 20, "c": 12}
    waiters = [Waiter(ns, f"{ns}{i}", NOW - 1000 + i * (1 if ns == "a" else 7)) for ns, n in appetite.items()
               for i in range(n)]
    got: Counter[str] = Counter()
    chosen = policy(order="FairShare")
    for _ in range(30):
        head = queue_order.order(waiters, dict(got), {}, chosen, NOW)[0].waiter
        got[head.namespace] += 1
        waiters.remove(head)
    assert got == Counter({"a": 10, "b": 10, "c": 10})


def test_fifo_hands_the_same_handles_to_the_namespace_that_filed_first() -> None:
    waiters = [Waiter("a", f"a{i}", NOW - 1000 + i) for i in range(20)] + \
        [Waiter("b", f"b{i}", NOW - 500 + i) for i in range(5)]
    assert all(name.startswith("a/") for name in served(waiters, {}, queue_policy.FIFO)[:20])


def test_weights_scale_a_namespaces_share() -> None:
    waiters = [Waiter(ns, f"{ns}{i}", NOW - 100 + i) for ns in ("a", "b") for i in range(30)]
    got: Counter[str] = Counter()
    chosen = policy(order="FairShare", namespaceWeightKey="share")
    for _ in range(30):
        head = queue_order.order(waiters, dict(got), {"a": 2.0, "b": 1.0}, chosen, NOW)[0].waiter
        got[head.namespace] += 1
        waiters.remove(head)
    assert got == Counter({"a": 20, "b": 10})


@pytest.mark.parametrize(("metadata", "weight"), [
    ({"labels": {"share": "3"}}, 3.0),
    ({"annotations": {"share": "0.5"}}, 0.5),
    ({"labels": {"share": "-1"}}, 1.0),
    ({"labels": {"share": "lots"}}, 1.0),
    ({}, 1.0),
])
def test_a_namespace_weight_is_a_positive_number_or_one(metadata: dict, weight: float) -> None:
    assert queue_policy.weight(metadata, "share") == weight


def test_claims_over_the_cap_have_no_position_and_the_rest_go_on() -> None:
    waiters = [Waiter("a", "a0", NOW - 30), Waiter("a", "a1", NOW - 20), Waiter("b", "b0", NOW - 10)]
    standings = queue_order.order(waiters, {"a": 1}, {}, policy(maxPerNamespace=2), NOW)
    by_name = {s.waiter.name: s for s in standings}
    assert by_name["a0"].position == 1 and by_name["b0"].position == 2
    assert by_name["a1"].capped and by_name["a1"].bound == 1 and by_name["a1"].ahead_in_namespace == 1
    assert queue_order.heads(standings, free=5) == [waiters[0], waiters[2]]


def test_higher_priority_first_and_aging_lets_nothing_starve() -> None:
    chosen = policy(priority={"classes": {"urgent": 5, "low": -2}, "agingInterval": "10m"})
    old_low = Waiter("a", "old-low", NOW - 3600, "low")  # waited 6 intervals: -2 + 6 = 4
    urgent = Waiter("b", "urgent", NOW - 60, "urgent")  # 5 + 0
    plain = Waiter("c", "plain", NOW - 30)  # default 0
    unknown = Waiter("d", "unknown", NOW - 20, "vip")  # not a class: the default
    standings = queue_order.order([old_low, urgent, plain, unknown], {}, {}, chosen, NOW)
    assert [(s.waiter.name, s.level) for s in standings] == [("urgent", 5), ("old-low", 4), ("plain", 0),
                                                              ("unknown", 0)]
    later = NOW + 1200  # 20 minutes on: old-low 6, urgent 7 — and after an hour more old-low overtakes newer urgents
    newer_urgent = Waiter("e", "newer-urgent", later, "urgent")
    first = queue_order.order([old_low, newer_urgent], {}, {}, chosen, later + 3600)[0]
    assert first.waiter.name == "old-low"


def test_fair_share_within_a_priority_level() -> None:
    chosen = policy(order="FairShare", priority={"classes": {"high": 1}, "agingInterval": "1d"})
    waiters = [Waiter("a", "a-high", NOW - 5, "high"), Waiter("a", "a0", NOW - 50), Waiter("b", "b0", NOW - 1)]
    assert served(waiters, {"a": 3, "b": 0}, chosen) == ["a/a-high", "b/b0", "a/a0"]


def test_the_bound_message_says_why_the_claim_stands_where_it_does() -> None:
    why = claim_queue.Why("FairShare", "user1", 3, priority=2)
    place = claim_queue.place("pool=labs", 2, 7, [], why)
    record = claim_queue.record(place, WRITTEN)
    assert (record["position"], record["order"], record["namespaceHolds"], record["priority"]) == (2, "FairShare",
                                                                                                 3, 2)
    assert claim_queue.message(record) == ("Waiting for a ResourceHandle of ResourcePool labs: position 2 of 7 "
                                           "(priority 2; fair share: namespace user1 holds 3). Handle creation is "
                                           "disabled.")
    capped = claim_queue.record(claim_queue.place("pool=labs", None, 7, [], claim_queue.Why(
        "FIFO", "user1", 3, cap=3, ahead_in_namespace=1)), WRITTEN)
    assert "position" not in capped
    assert claim_queue.message(capped) == (
        "Waiting for a ResourceHandle of ResourcePool labs: namespace user1 holds 3 of at most 3 at once "
        "(maxPerNamespace) and 1 of its claims wait ahead of this one; served when one of them goes. Handle "
        "creation is disabled.")

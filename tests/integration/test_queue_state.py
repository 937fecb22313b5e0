"""What a queue policy orders a scope's waiting claims by, as the index keeps it on a real redis-server
(:meth:`cache.handle_index.RedisHandleIndex.queue_state`): the waiting claims with their creation times and the
priority class each asks for, how many handles each of their namespaces holds in the scope, and how many are
unbound; and a reservation that honours the place a policy gave the claim."""

from __future__ import annotations

from datetime import UTC, datetime

from poolboy.domain.binding.queue_order import Waiter
from tests.integration.test_waiting_heads import API, DOMAIN, handle, waiting_claim

SCOPE = "pool=p"


def minute(n: int) -> float:
    """The epoch time of ``waiting_claim(…, n)``'s creation."""
    return datetime(2026, 11, 28, 0, n, tzinfo=UTC).timestamp()


def in_namespace(claim: dict, namespace: str, priority: str | None = None) -> dict:
    claim["metadata"]["namespace"] = namespace
    if priority:
        claim["metadata"]["labels"][f"{DOMAIN}/priority"] = priority
    return claim


def bound(name: str, namespace: str) -> dict:
    taken = handle(name)
    taken["metadata"]["labels"].update({f"{DOMAIN}/resource-claim-name": f"for-{name}",
                                        f"{DOMAIN}/resource-claim-namespace": namespace})
    taken["spec"]["resourceClaim"] = {"apiVersion": API, "kind": "ResourceClaim", "name": f"for-{name}",
                                      "namespace": namespace}
    return taken


def test_the_queue_state_holds_waiters_priorities_holdings_and_free_handles(cache, index) -> None:
    cache.put(in_namespace(waiting_claim("a0", 1, pool="p"), "heavy"))
    cache.put(in_namespace(waiting_claim("b0", 2, pool="p"), "light", priority="high"))
    cache.put(in_namespace(waiting_claim("elsewhere", 0, pool="q"), "light"))
    for name in ("x1", "x2", "x3"):
        cache.put(bound(name, "heavy"))
    cache.put(handle("free"))
    state = index.queue_state(SCOPE)
    assert state is not None
    assert sorted(state.waiters, key=lambda w: w.name) == [
        Waiter("heavy", "a0", minute(1), None), Waiter("light", "b0", minute(2), "high")]
    assert state.bound == {"heavy": 3, "light": 0}
    assert state.free == 1


def test_a_handle_that_goes_leaves_its_namespaces_holdings(cache, index) -> None:
    cache.put(in_namespace(waiting_claim("a0", 1, pool="p"), "heavy"))
    gone = bound("x1", "heavy")
    cache.put(gone)
    cache.put(bound("x2", "heavy"))
    cache.delete(gone)
    state = index.queue_state(SCOPE)
    assert state is not None and state.bound == {"heavy": 1}


def test_a_reservation_waits_unless_its_position_is_within_the_free_handles(cache, index) -> None:
    newest = in_namespace(waiting_claim("newest", 9, pool="p"), "light")
    cache.put(in_namespace(waiting_claim("oldest", 1, pool="p"), "heavy"))
    cache.put(newest)
    cache.put(handle("h1"))
    assert index.reserve(SCOPE, ["h1"], newest).wait, "oldest first: the newest claim waits"
    assert index.reserve(SCOPE, ["h1"], newest, position=2).wait, "second under a policy, one free handle: waits"
    taken = index.reserve(SCOPE, ["h1"], newest, position=1)
    assert taken.name == "h1", "first under a policy: it takes the handle although an older claim waits"


def test_under_a_cap_a_namespace_holds_what_its_claims_reserved_before_the_index_shows_them_bound(cache, index) -> None:
    first = in_namespace(waiting_claim("first", 1, pool="p"), "team")
    second = in_namespace(waiting_claim("second", 2, pool="p"), "team")
    other = in_namespace(waiting_claim("other", 3, pool="p"), "elsewhere")
    for name in ("h1", "h2", "h3"):
        cache.put(handle(name))
    assert index.reserve(SCOPE, ["h1"], first, position=1, cap=1).name == "h1"
    held = index.reserve(SCOPE, ["h2"], second, position=1, cap=1)
    assert held.capped and held.name is None, "the team's first reservation counts against its cap of 1"
    assert index.reserve(SCOPE, ["h2"], other, position=1, cap=1).name == "h2", "another namespace is not held"
    index.release("h1", first, SCOPE)  # the first bind lost its race: the team holds nothing again
    assert index.reserve(SCOPE, ["h3"], second, position=1, cap=1).name == "h3"


def test_a_handle_reserved_bound_and_gone_no_longer_counts_against_the_cap(cache, index) -> None:
    first = in_namespace(waiting_claim("first", 1, pool="p"), "team")
    second = in_namespace(waiting_claim("second", 2, pool="p"), "team")
    cache.put(handle("h1"))
    cache.put(handle("h2"))
    assert index.reserve(SCOPE, ["h1"], first, position=1, cap=1).name == "h1"
    taken = bound("h1", "team")
    cache.put(taken)
    assert index.reserve(SCOPE, ["h2"], second, position=1, cap=1).capped, "bound: held"
    cache.delete(taken)  # its claim was deleted, and the handle with it
    assert index.reserve(SCOPE, ["h2"], second, position=1, cap=1).name == "h2"

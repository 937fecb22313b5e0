"""client-go's Event correlation, pure: which occurrences are one Event with a count, when messages are combined,
and when the spam filter stops a source from reporting about an object."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from poolboy.kube.events import (
    AGGREGATE_MAX_EVENTS,
    COMBINED_PREFIX,
    LRU,
    SPAM_BURST,
    WINDOW_SECONDS,
    Correlator,
    aggregate_key,
    event_body,
    event_key,
    spam_key,
)

CLAIM = {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "user", "uid": "u-1", "resourceVersion": "7"}}


def body(reason: str = "Bound", message: str = "bound to h", obj: dict | None = None, *,
         namespace: str = "poolboy", type: str = "Normal") -> dict:
    return event_body(obj or CLAIM, reason, message, type=type, default_namespace=namespace,
                      now=datetime(2024, 1, 1, 12, 0, tzinfo=UTC))


# --- the body ----------------------------------------------------------------------------------------------------


def test_body_is_a_core_event_about_the_object() -> None:
    event = body(message="x" * 5000)
    assert event["metadata"]["namespace"] == "user" and event["metadata"]["name"].startswith("c.")
    assert event["involvedObject"] == {"apiVersion": CLAIM["apiVersion"], "kind": "ResourceClaim", "name": "c",
                                       "namespace": "user", "uid": "u-1", "resourceVersion": "7"}
    assert event["count"] == 1 and event["firstTimestamp"] == event["lastTimestamp"] == "2024-01-01T12:00:00Z"
    assert len(event["message"]) == 1024 and event["action"] == "Bound" and event["type"] == "Normal"


def test_cluster_scoped_objects_report_in_the_default_namespace() -> None:
    event = body(obj={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}, namespace="op")
    assert event["metadata"]["namespace"] == "op" and "namespace" not in event["involvedObject"]


def test_each_body_has_its_own_name() -> None:
    assert body()["metadata"]["name"] != body()["metadata"]["name"]


# --- keys --------------------------------------------------------------------------------------------------------


def test_event_key_ignores_the_objects_version_but_not_reason_or_message() -> None:
    later = {**CLAIM, "metadata": {**CLAIM["metadata"], "resourceVersion": "8"}}
    assert event_key(body()) == event_key(body(obj=later))
    assert event_key(body()) != event_key(body(reason="Other"))
    assert event_key(body()) != event_key(body(message="other"))
    assert event_key(body()) != event_key(body(type="Warning"))


def test_aggregate_and_spam_keys_ignore_the_message() -> None:
    assert aggregate_key(body(message="a")) == aggregate_key(body(message="b"))
    assert aggregate_key(body(reason="A")) != aggregate_key(body(reason="B"))
    assert spam_key(body(reason="A", message="a")) == spam_key(body(reason="B", message="b"))


def test_the_same_cluster_scoped_object_reported_into_two_namespaces_is_two_series() -> None:
    namespace_obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    assert event_key(body(obj=namespace_obj, namespace="a")) != event_key(body(obj=namespace_obj, namespace="b"))


# --- series ------------------------------------------------------------------------------------------------------


@given(st.integers(min_value=1, max_value=200))
def test_identical_occurrences_in_the_window_are_one_event_with_their_count(n: int) -> None:
    correlator = Correlator()
    first = correlator.observe(body(), 0.0)
    series = first
    for index in range(1, n):
        series = correlator.observe(body(), float(index))
    assert series is first and series.count == n
    assert series.create_body()["count"] == n and series.create_body()["metadata"]["name"] == first.name
    assert series.patch() == {"count": n, "lastTimestamp": "2024-01-01T12:00:00Z", "message": "bound to h"}


def test_different_reasons_are_different_events() -> None:
    correlator = Correlator()
    bound, created = correlator.observe(body("Bound"), 0), correlator.observe(body("HandleCreated"), 0)
    assert bound is not created and bound.count == created.count == 1 and bound.name != created.name


def test_a_repeat_after_a_quiet_window_starts_a_new_event() -> None:
    correlator = Correlator()
    first = correlator.observe(body(), 0)
    again = correlator.observe(body(), WINDOW_SECONDS - 1)
    assert again is first and again.count == 2
    later = correlator.observe(body(), 2 * WINDOW_SECONDS)  # quiet for more than the window since the last one
    assert later is not first and later.count == 1 and later.name != first.name


def test_repeat_keeps_the_first_timestamp_and_takes_the_last() -> None:
    correlator = Correlator()
    first = body()
    series = correlator.observe(first, 0)
    second = event_body(CLAIM, "Bound", "bound to h", default_namespace="poolboy",
                        now=datetime(2024, 1, 1, 12, 5, tzinfo=UTC))
    correlator.observe(second, 1)
    created = series.create_body()
    assert created["firstTimestamp"] == "2024-01-01T12:00:00Z" and created["lastTimestamp"] == "2024-01-01T12:05:00Z"


# --- aggregation -------------------------------------------------------------------------------------------------


def test_many_messages_for_one_reason_are_combined_into_one_event() -> None:
    correlator = Correlator()
    own = [correlator.observe(body(message=f"created r{i}"), i) for i in range(AGGREGATE_MAX_EVENTS - 1)]
    assert len({id(s) for s in own}) == AGGREGATE_MAX_EVENTS - 1 and all(s.count == 1 for s in own)
    combined = [correlator.observe(body(message=f"created x{i}"), 100 + i) for i in range(5)]
    assert all(s is combined[0] for s in combined) and combined[0].count == 5
    assert combined[0].message == COMBINED_PREFIX + "created x4"
    assert combined[0].name not in {s.name for s in own}
    # a message seen before the threshold keeps counting in its own Event
    assert correlator.observe(body(message="created r0"), 200) is own[0] and own[0].count == 2


def test_aggregation_starts_over_after_a_quiet_window() -> None:
    correlator = Correlator()
    for i in range(AGGREGATE_MAX_EVENTS):
        correlator.observe(body(message=f"m{i}"), i)
    fresh = correlator.observe(body(message="new"), 10 + 2 * WINDOW_SECONDS)
    assert not fresh.message.startswith(COMBINED_PREFIX)


def test_other_reasons_are_not_combined() -> None:
    correlator = Correlator()
    for i in range(AGGREGATE_MAX_EVENTS + 3):
        correlator.observe(body(reason="ResourceCreated", message=f"m{i}"), i)
    assert correlator.observe(body(reason="Bound"), 50).message == "bound to h"


# --- spam filter -------------------------------------------------------------------------------------------------


def test_spam_filter_allows_a_burst_then_one_per_five_minutes() -> None:
    correlator = Correlator()
    series = correlator.observe(body(), 0)
    assert all(correlator.allow(series, 0) for _ in range(SPAM_BURST))
    assert not correlator.allow(series, 1)
    assert correlator.allow(series, 301) and not correlator.allow(series, 302)


def test_spam_filter_is_per_object() -> None:
    correlator = Correlator(burst=1)
    other = {**CLAIM, "metadata": {**CLAIM["metadata"], "name": "d", "uid": "u-2"}}
    mine, theirs = correlator.observe(body(), 0), correlator.observe(body(obj=other), 0)
    assert correlator.allow(mine, 0) and not correlator.allow(mine, 0) and correlator.allow(theirs, 0)


# --- bounded memory ----------------------------------------------------------------------------------------------


def test_lru_forgets_the_least_recently_used() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3 and len(cache) == 2


def test_correlator_state_is_bounded() -> None:
    correlator = Correlator(cache_size=10)
    for i in range(100):
        correlator.observe(body(obj={**CLAIM, "metadata": {**CLAIM["metadata"], "name": f"c{i}"}}), i)
    assert len(correlator._series) == 10 and len(correlator._aggregates) == 10


def test_quiet_entries_are_forgotten() -> None:
    correlator = Correlator()
    for i in range(50):
        correlator.observe(body(obj={**CLAIM, "metadata": {**CLAIM["metadata"], "name": f"c{i}"}}), i)
    correlator.observe(body(), 50 + 2 * WINDOW_SECONDS)
    assert len(correlator._series) == 1 and len(correlator._aggregates) == 1


"""Ranking from index summaries (the warm bind path) orders candidates exactly as ranking whole handles does.

``candidates.rank`` sorts each class of a snapshot once and merges the classes lazily; the reference is
``matching.rank_candidates`` over the full handles (docs/behaviour.md#binding).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from poolboy.domain import candidates, matching

DOMAIN = matching.DEFAULT_DOMAIN
NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
TEMPLATES = ({"spec": {"value": "a"}}, {"spec": {"value": "b"}}, {"spec": {"value": "a", "extra": 1}})
CLAIM_RESOURCES = [{"provider": {"name": "p"}, "template": {"spec": {"value": "a"}}}]
CLAIM = {"metadata": {"name": "c", "namespace": "user"}, "spec": {"resources": CLAIM_RESOURCES}}
PROVIDERS = {"p": {"metadata": {"name": "p"}, "spec": {}}}


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


handles = st.lists(st.fixed_dictionaries({
    "template": st.sampled_from(TEMPLATES),
    "resource_name": st.sampled_from([None, "r1", "other"]),
    "healthy": st.sampled_from([True, False, None]),
    "ready": st.sampled_from([True, False, None]),
    "score": st.sampled_from([None, 0, 1, 2.5]),
    "created": st.integers(min_value=0, max_value=5),
    "end": st.sampled_from([None, 60, 3600]),
}), max_size=40)


def _handle(index: int, facts: dict) -> dict:
    resource = {"provider": {"name": "p"}, "template": facts["template"]}
    if facts["resource_name"]:
        resource["name"] = facts["resource_name"]
    spec: dict = {"resources": [resource]}
    if facts["score"] is not None:
        spec["preferenceScore"] = facts["score"]
    if facts["end"] is not None:
        spec["lifespan"] = {"end": _stamp(NOW + timedelta(seconds=facts["end"]))}
    status = {key: facts[key] for key in ("healthy", "ready") if facts[key] is not None}
    return {"metadata": {"name": f"h{index:02d}", "namespace": "poolboy",
                         "creationTimestamp": _stamp(NOW - timedelta(hours=facts["created"]))},
            "spec": spec, "status": status}


def _ranked(snapshot: candidates.Snapshot, by_name: dict[str, dict]) -> list[str]:
    return list(candidates.rank(CLAIM, snapshot, fetch=by_name.get, providers=lambda _: PROVIDERS, now=NOW,
                                domain=DOMAIN, claim_resources=CLAIM_RESOURCES))


@settings(max_examples=200, deadline=None)
@given(handles)
def test_summaries_rank_as_whole_handles_do(facts: list[dict]) -> None:
    whole = [_handle(i, f) for i, f in enumerate(facts)]
    by_name = {h["metadata"]["name"]: h for h in whole}
    snapshot = candidates.Snapshot({name: candidates.summary(h, DOMAIN) for name, h in by_name.items()}, 0.0)
    expected = [h["metadata"]["name"] for h in
                matching.rank_candidates(CLAIM, whole, PROVIDERS, NOW, domain=DOMAIN, claim_resources=CLAIM_RESOURCES)]
    assert _ranked(snapshot, by_name) == expected


@settings(max_examples=100, deadline=None)
@given(handles, st.data())
def test_a_snapshot_without_some_handles_ranks_the_rest_in_the_same_order(facts: list[dict],
                                                                          data: st.DataObject) -> None:
    by_name = {h["metadata"]["name"]: h for h in (_handle(i, f) for i, f in enumerate(facts))}
    snapshot = candidates.Snapshot({name: candidates.summary(h, DOMAIN) for name, h in by_name.items()}, 0.0)
    before = _ranked(snapshot, by_name)
    gone = data.draw(st.sets(st.sampled_from(sorted(by_name)))) if by_name else set()
    smaller = snapshot.without(gone | {"not-in-the-snapshot"})
    assert _ranked(smaller, by_name) == [name for name in before if name not in gone]
    assert set(smaller) == set(by_name) - gone and len(smaller) == len(by_name) - len(gone)
    assert _ranked(snapshot, by_name) == before, "the snapshot itself is unchanged"

"""Ranking from index summaries (the warm bind path) orders candidates exactly as ranking whole handles does; a list
by the unbound index names the handles the cache files under it.

``candidates.rank`` sorts each class of a snapshot once and merges the classes lazily; the reference is
``matching.rank_candidates`` over the full handles (docs/behaviour.md#binding).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from poolboy.domain import matching
from poolboy.domain.binding import candidates

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
    "state": st.sampled_from([None, "Running", "Standby", "Resuming"]),
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
    status = {key: facts[key] for key in ("healthy", "ready", "state") if facts[key] is not None}
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


# --- the unbound index: what the cache files, what a reader's list(index=...) answers -----------------------------

unbound_facts = st.fixed_dictionaries({
    "provider": st.sampled_from(["p", "q", ""]),
    "pool_label": st.sampled_from([None, "a", "b"]),
    "pool_spec": st.sampled_from([None, "a", "b"]),
    "claim_label": st.booleans(),
    "claim_spec": st.booleans(),
    "deleting": st.booleans(),
    "ignored": st.booleans(),
})
SCOPES = ("provider=p", "provider=q", "provider=", "pool=a", "pool=b")


def _unbound_candidate(facts: dict) -> dict:
    labels = {}
    if facts["pool_label"]:
        labels[f"{DOMAIN}/resource-pool-name"] = facts["pool_label"]
    if facts["claim_label"]:
        labels[f"{DOMAIN}/resource-claim-name"] = "c"
    if facts["ignored"]:
        labels[f"{DOMAIN}/ignore"] = ""
    spec: dict = {"resources": [{"provider": {"name": facts["provider"]}}] if facts["provider"] else []}
    if facts["pool_spec"]:
        spec["resourcePool"] = {"name": facts["pool_spec"]}
    if facts["claim_spec"]:
        spec["resourceClaim"] = {"name": "c", "namespace": "user"}
    metadata: dict = {"name": "h", "namespace": "poolboy", "labels": labels}
    if facts["deleting"]:
        metadata["deletionTimestamp"] = _stamp(NOW)
    return {"metadata": metadata, "spec": spec}


@settings(max_examples=300, deadline=None)
@given(unbound_facts, st.lists(st.sampled_from(SCOPES), min_size=1, max_size=3, unique=True))
def test_a_list_by_the_unbound_index_answers_what_the_cache_files(facts: dict, scopes: list[str]) -> None:
    """The API client answers ``list(index=unbound_in(...))`` with :meth:`IndexMatch.matches`, the shared cache from
    the entries :func:`candidates.index_entries` filed: the two must name the same handles for every scope."""
    handle = _unbound_candidate(facts)
    filed = {name for name, _ in candidates.index_entries(handle, DOMAIN)}
    match = candidates.unbound_in(DOMAIN, *scopes)
    assert match.matches(handle) == bool(filed & set(match.names()))
    if match.matches(handle):
        assert candidates.is_unbound(handle, DOMAIN)

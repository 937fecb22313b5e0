"""Provider matching, template matching, candidate exclusion and ranking (docs/behaviour.md#provider-selection,
#binding)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from poolboy.domain.matching import (
    exclusion_reason,
    matches,
    rank_candidates,
    select_providers,
    template_diff_ops,
    template_matches,
)

D = "poolboy.gpte.redhat.com"
NOW = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)


# ----------------------------------------------------------------------------------------------- matches

MATCH_CASES = [
    ({}, {}, True),
    ({}, {"a": 1}, True),
    ({"a": 1}, {"a": 1}, True),
    ({"a": 1}, {"a": 1, "b": 2}, True),
    ({"a": 1}, {"a": 2}, False),
    ({"a": 1}, {}, False),
    ({"a": None}, {}, False),
    ({"a": None}, {"a": None}, True),
    ({"a": True}, {"a": 1}, False),
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, True),
    ({"a": {"b": 1}}, {"a": {"c": 2}}, False),
    ({"a": {}}, {"a": {"c": 2}}, True),
    ({"a": {}}, {"a": 1}, False),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}, True),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, {"apiVersion": "v1", "kind": "Secret"}, False),
    ({"l": [1]}, {"l": [1, 2]}, True),
    ({"l": [1, 2]}, {"l": [1]}, False),
    ({"l": [2]}, {"l": [1, 2]}, False),
    ({"l": []}, {"l": [1]}, True),
    ({"l": [{"a": 1}]}, {"l": [{"a": 1, "b": 2}]}, True),
    ({"l": [{"a": 1}]}, {"l": [{"b": 2}]}, False),
    ({"l": [1]}, {"l": {"0": 1}}, False),
    ({"a": "x"}, {"a": ["x"]}, False),
    ("x", "x", True),
    ("x", "y", False),
]


@pytest.mark.parametrize(("match", "template", "expected"), MATCH_CASES)
def test_matches(match, template, expected):
    assert matches(match, template) is expected


def _provider(name, match=None, match_ignore=None, **spec):
    provider = {"metadata": {"name": name}, "spec": dict(spec)}
    if match is not None:
        provider["spec"]["match"] = match
    if match_ignore is not None:
        provider["spec"]["matchIgnore"] = match_ignore
    return provider


def test_select_providers_considers_all_and_reports_ambiguity():
    providers = [
        _provider("cm", {"apiVersion": "v1", "kind": "ConfigMap"}),
        _provider("secret", {"apiVersion": "v1", "kind": "Secret"}),
        _provider("cm-app", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"app": "x"}}}),
        _provider("no-match"),
        _provider("empty-match", {}),
    ]
    names = lambda template: [p["metadata"]["name"] for p in select_providers(template, providers)]  # noqa: E731
    assert names({"apiVersion": "v1", "kind": "Secret"}) == ["secret"]
    assert names({"apiVersion": "v1", "kind": "ConfigMap"}) == ["cm"]
    assert names({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"app": "x"}}}) == ["cm", "cm-app"]
    assert names({"apiVersion": "v1", "kind": "Pod"}) == []
    assert names({}) == []


# ----------------------------------------------------------------------------------------------- template matching

DIFF_CASES = [
    ({}, {}, []),
    ({"a": 1}, {"a": 1}, []),
    ({"a": 1, "b": 2}, {"a": 1}, []),  # fields only in the handle are ignored
    ({"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}]),
    ({}, {"a": 1}, [{"op": "add", "path": "/a", "value": 1}]),
    ({"l": [1, 2]}, {"l": [1]}, []),
    ({"l": [1]}, {"l": [1, 2]}, [{"op": "add", "path": "/l/1", "value": 2}]),
    (None, {"a": 1}, [{"op": "add", "path": "/a", "value": 1}]),
    ({"a": 1}, None, []),
]


@pytest.mark.parametrize(("handle", "claim", "ops"), DIFF_CASES)
def test_template_diff_ops(handle, claim, ops):
    assert template_diff_ops(handle, claim) == ops


TEMPLATE_MATCH_CASES = [
    ({"spec": {"x": 1}}, {"spec": {"x": 1}}, [], True),
    ({"spec": {"x": 1, "extra": 1}}, {"spec": {"x": 1}}, [], True),
    ({"spec": {"x": 1}}, {"spec": {"x": 2}}, [], False),
    ({"spec": {"x": 1}}, {"spec": {"x": 2}}, ["/spec/x"], True),
    ({"spec": {"x": 1}}, {"spec": {"x": 2}}, ["/spec/.*"], True),
    ({"spec": {"x": 1}}, {"spec": {"x": 2}}, ["/spec"], False),  # anchored at the end
    ({"spec": {"x": 1}}, {"spec": {"x": 2}}, ["spec/x"], False),  # anchored at the start
    ({"spec": {"x": 1}}, {"spec": {"x": 2, "y": 3}}, ["/spec/x"], False),
    ({"spec": {"x": 1}}, {"spec": {"x": 2, "y": 3}}, ["/spec/x", "/spec/y"], True),
    ({"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}, ["/metadata/name"], True),
    ({}, {"metadata": {"labels": {"a/b": "x"}}}, ["/metadata"], True),
    ({"metadata": {}}, {"metadata": {"labels": {"a/b": "x"}}}, ["/metadata/labels/a~1b"], False),
    ({"metadata": {"labels": {}}}, {"metadata": {"labels": {"a/b": "x"}}}, ["/metadata/labels/a~1b"], True),
    ({"spec": {"l": [1]}}, {"spec": {"l": [2]}}, ["/spec/l/[0-9]+"], True),
]


@pytest.mark.parametrize(("handle", "claim", "ignore", "expected"), TEMPLATE_MATCH_CASES)
def test_template_matches(handle, claim, ignore, expected):
    assert template_matches(handle, claim, ignore) is expected


# ----------------------------------------------------------------------------------------------- candidates

PROVIDERS = {
    "test": _provider("test", match_ignore=["/spec/ignored(/.*)?"]),
    "other": _provider("other"),
}


def _claim(*resources, pool=None):
    claim = {
        "metadata": {"name": "c", "namespace": "ns", "annotations": {}},
        "spec": {"resources": list(resources) or [{"provider": {"name": "test"}, "template": {"spec": {"x": 1}}}]},
    }
    if pool:
        claim["metadata"]["annotations"][f"{D}/resource-pool-name"] = pool
    return claim


def _res(provider="test", name=None, **template):
    resource = {"provider": {"name": provider}, "template": template or {"spec": {"x": 1}}}
    if name:
        resource["name"] = name
    return resource


def _handle(
    name="guid-aaaaa",
    resources=None,
    *,
    healthy=None,
    ready=None,
    score=None,
    created="2024-01-01T00:00:00Z",
    end=None,
    pool=None,
    bound=False,
    deleting=False,
    labels=None,
):
    handle = {
        "metadata": {"name": name, "creationTimestamp": created, "labels": dict(labels or {})},
        "spec": {"resources": resources if resources is not None else [_res()]},
        "status": {},
    }
    if healthy is not None:
        handle["status"]["healthy"] = healthy
    if ready is not None:
        handle["status"]["ready"] = ready
    if score is not None:
        handle["spec"]["preferenceScore"] = score
    if end:
        handle["spec"]["lifespan"] = {"end": end}
    if pool:
        handle["spec"]["resourcePool"] = {"name": pool}
    if bound:
        handle["spec"]["resourceClaim"] = {"name": "other", "namespace": "ns"}
    if deleting:
        handle["metadata"]["deletionTimestamp"] = "2024-01-01T11:00:00Z"
    return handle


EXCLUSION_CASES = [
    ("plain", _claim(), _handle(), None),
    ("deleting", _claim(), _handle(deleting=True), "deleting"),
    ("bound", _claim(), _handle(bound=True), "already bound"),
    ("unhealthy", _claim(), _handle(healthy=False), "unhealthy"),
    ("healthy unknown ok", _claim(), _handle(healthy=None), None),
    ("unready ok", _claim(), _handle(ready=False), None),
    ("pool required", _claim(pool="p1"), _handle(), "not in the requested pool"),
    ("pool ok", _claim(pool="p1"), _handle(pool="p1"), None),
    ("pool wrong", _claim(pool="p1"), _handle(pool="p2"), "not in the requested pool"),
    ("pool via label", _claim(pool="p1"), _handle(labels={f"{D}/resource-pool-name": "p1"}), None),
    ("pool handle for a poolless claim ok", _claim(), _handle(pool="p1"), None),
    ("expires in 119s", _claim(), _handle(end="2024-01-01T12:01:59Z"), "expires within 120s"),
    ("expires in 120s", _claim(), _handle(end="2024-01-01T12:02:00Z"), None),
    ("expired", _claim(), _handle(end="2024-01-01T11:00:00Z"), "expires within 120s"),
    ("expires later", _claim(), _handle(end="2024-01-02T00:00:00Z"), None),
    ("unreadable end", _claim(), _handle(end="soon"), "expires within 120s"),
    ("more resources", _claim(), _handle(resources=[_res(), _res()]), "more resources than the claim"),
    ("fewer resources ok", _claim(_res(), _res()), _handle(resources=[_res()]), None),
    ("no resources ok", _claim(), _handle(resources=[]), None),
    ("provider mismatch", _claim(), _handle(resources=[_res("other")]), "provider mismatch at resource 0"),
    (
        "provider mismatch at 1",
        _claim(_res(), _res()),
        _handle(resources=[_res(), _res("other")]),
        "provider mismatch at resource 1",
    ),
    ("template mismatch", _claim(), _handle(resources=[_res(spec={"x": 2})]), "template mismatch at resource 0"),
    ("handle-only fields ok", _claim(), _handle(resources=[_res(spec={"x": 1, "y": 2})]), None),
    (
        "claim extra field",
        _claim(_res(spec={"x": 1, "y": 2})),
        _handle(resources=[_res(spec={"x": 1})]),
        "template mismatch at resource 0",
    ),
    ("matchIgnore", _claim(_res(spec={"x": 1, "ignored": 5})), _handle(), None),
    ("matchIgnore nested", _claim(_res(spec={"x": 1, "ignored": {"a": 1}})), _handle(), None),
    (
        "matchIgnore of the claim provider",
        _claim(_res("other", spec={"x": 1, "ignored": 5})),
        _handle(resources=[_res("other")]),
        "template mismatch at resource 0",
    ),
    (
        "unknown provider: no matchIgnore",
        _claim(_res("nope", spec={"x": 1})),
        _handle(resources=[_res("nope", spec={"x": 1})]),
        None,
    ),
]


@pytest.mark.parametrize(("label", "claim", "handle", "reason"), EXCLUSION_CASES, ids=[c[0] for c in EXCLUSION_CASES])
def test_exclusions(label, claim, handle, reason):
    assert exclusion_reason(claim, handle, PROVIDERS, NOW, domain=D) == reason
    assert rank_candidates(claim, [handle], PROVIDERS, NOW, domain=D) == ([] if reason else [handle])


def test_naive_now_is_utc():
    handle = _handle(end="2024-01-01T12:01:00Z")
    assert exclusion_reason(_claim(), handle, PROVIDERS, NOW.replace(tzinfo=None)) == "expires within 120s"


def test_other_domain_pool_annotation():
    claim = _claim()
    claim["metadata"]["annotations"]["other.example.com/resource-pool-name"] = "p1"
    assert rank_candidates(claim, [_handle()], PROVIDERS, NOW, domain="other.example.com") == []
    assert rank_candidates(claim, [_handle()], PROVIDERS, NOW, domain=D) == [_handle()]


def test_claim_resources_override_spec_resources():
    claim = {"metadata": {"name": "c"}, "spec": {"provider": {"name": "test"}}}
    handle = _handle()
    assert rank_candidates(claim, [handle], PROVIDERS, NOW) == []  # no claim resources: handle has more
    assert rank_candidates(claim, [handle], PROVIDERS, NOW, claim_resources=[_res()]) == [handle]


# ----------------------------------------------------------------------------------------------- ranking


def _names(handles):
    return [h["metadata"]["name"] for h in handles]


RANK_CASES = [
    (
        "1 resource-count difference",
        _claim(_res(), _res()),
        [_handle("guid-a", [_res()]), _handle("guid-b", [_res(), _res()])],
        ["guid-b", "guid-a"],
    ),
    (
        "1 beats healthy",
        _claim(_res(), _res()),
        [_handle("guid-a", [_res()], healthy=True, ready=True), _handle("guid-b", [_res(), _res()])],
        ["guid-b", "guid-a"],
    ),
    (
        "2 name mismatches",
        _claim(_res(name="db")),
        [_handle("guid-a", [_res(name="web")]), _handle("guid-b", [_res(name="db")])],
        ["guid-b", "guid-a"],
    ),
    (
        "2 unnamed claim resource has no preference",
        _claim(_res()),
        [_handle("guid-b", [_res(name="web")]), _handle("guid-a", [_res(name="db")])],
        ["guid-a", "guid-b"],
    ),
    (
        "3 fewer diff ops",
        _claim(_res(spec={"x": 1, "ignored": 1})),
        [_handle("guid-a", [_res(spec={"x": 1})]), _handle("guid-b", [_res(spec={"x": 1, "ignored": 1})])],
        ["guid-b", "guid-a"],
    ),
    (
        "3 beats healthy",
        _claim(_res(spec={"x": 1, "ignored": 1})),
        [
            _handle("guid-a", [_res(spec={"x": 1})], healthy=True, ready=True),
            _handle("guid-b", [_res(spec={"x": 1, "ignored": 1})]),
        ],
        ["guid-b", "guid-a"],
    ),
    (
        "4 healthy before unknown",
        _claim(),
        [_handle("guid-a"), _handle("guid-b", healthy=True)],
        ["guid-b", "guid-a"],
    ),
    (
        "4 healthy beats ready",
        _claim(),
        [_handle("guid-a", ready=True), _handle("guid-b", healthy=True, ready=False)],
        ["guid-b", "guid-a"],
    ),
    (
        "5 ready before not ready",
        _claim(),
        [_handle("guid-a", healthy=True, ready=False), _handle("guid-b", healthy=True, ready=True)],
        ["guid-b", "guid-a"],
    ),
    (
        "5 unknown readiness not preferred over known unready (older wins)",
        _claim(),
        [
            _handle("guid-new", healthy=True, created="2024-01-01T10:00:00Z"),
            _handle("guid-old", healthy=True, ready=False, created="2024-01-01T09:00:00Z"),
        ],
        ["guid-old", "guid-new"],
    ),
    (
        "5 ready beats score",
        _claim(),
        [_handle("guid-a", score=100), _handle("guid-b", ready=True)],
        ["guid-b", "guid-a"],
    ),
    (
        "6 higher preferenceScore",
        _claim(),
        [_handle("guid-a", score=1), _handle("guid-b", score=2.5), _handle("guid-c")],
        ["guid-b", "guid-a", "guid-c"],
    ),
    (
        "6 negative score below default 0",
        _claim(),
        [_handle("guid-a", score=-1), _handle("guid-b")],
        ["guid-b", "guid-a"],
    ),
    (
        "6 score beats age",
        _claim(),
        [_handle("guid-a", score=0, created="2020-01-01T00:00:00Z"), _handle("guid-b", score=1)],
        ["guid-b", "guid-a"],
    ),
    (
        "7 older first",
        _claim(),
        [
            _handle("guid-a", created="2024-01-01T02:00:00Z"),
            _handle("guid-b", created="2024-01-01T01:00:00Z"),
            _handle("guid-c", created="2024-01-01T03:00:00Z"),
        ],
        ["guid-b", "guid-a", "guid-c"],
    ),
    (
        "7 missing creationTimestamp last",
        _claim(),
        [_handle("guid-a", created=None), _handle("guid-b")],
        ["guid-b", "guid-a"],
    ),
    (
        "8 name tie-break",
        _claim(),
        [_handle("guid-c"), _handle("guid-a"), _handle("guid-b")],
        ["guid-a", "guid-b", "guid-c"],
    ),
    (
        "exclusions and ranking together",
        _claim(),
        [
            _handle("guid-unhealthy", healthy=False),
            _handle("guid-bound", bound=True),
            _handle("guid-ok", healthy=True),
            _handle("guid-unknown"),
            _handle("guid-expiring", healthy=True, ready=True, end="2024-01-01T12:01:00Z"),
        ],
        ["guid-ok", "guid-unknown"],
    ),
]


@pytest.mark.parametrize(("label", "claim", "handles", "expected"), RANK_CASES, ids=[c[0] for c in RANK_CASES])
def test_ranking(label, claim, handles, expected):
    assert _names(rank_candidates(claim, handles, PROVIDERS, NOW, domain=D)) == expected


@pytest.mark.parametrize("seed", range(10))
def test_ranking_is_deterministic_regardless_of_input_order(seed):
    handles = [
        _handle(
            f"guid-{i}",
            healthy=[True, None][i % 2],
            ready=[True, False, None][i % 3],
            score=i % 4,
            created=f"2024-01-01T0{i % 5}:00:00Z",
        )
        for i in range(12)
    ]
    expected = _names(rank_candidates(_claim(), handles, PROVIDERS, NOW))
    shuffled = handles[:]
    random.Random(seed).shuffle(shuffled)
    assert _names(rank_candidates(_claim(), shuffled, PROVIDERS, NOW)) == expected
    assert len(expected) == 12


def test_rank_does_not_mutate_inputs():
    claim, handles = _claim(), [_handle("guid-a"), _handle("guid-b")]
    before = repr((claim, handles))
    rank_candidates(claim, handles, PROVIDERS, NOW)
    assert repr((claim, handles)) == before

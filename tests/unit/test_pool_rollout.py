"""Pool rollover, pure: revisions, the update strategy and the rollout plan (``spec.updateStrategy``)."""

from __future__ import annotations

import pytest

from poolboy.domain import pool_revision, rollout
from poolboy.domain.rollout import Member, Plan, Strategy

POOL = {"spec": {"minAvailable": 3, "provider": {"name": "p", "parameterValues": {"a": 1, "b": 2}},
                 "vars": {"x": 1}}}


def test_revision_is_stable_and_follows_only_what_a_handle_is_built_from() -> None:
    base = pool_revision.revision(POOL, [("p", {"template": {"enable": True}})])
    reordered = {"spec": {"vars": {"x": 1}, "provider": {"parameterValues": {"b": 2, "a": 1}, "name": "p"},
                          "minAvailable": 3}}
    assert pool_revision.revision(reordered, [("p", {"template": {"enable": True}})]) == base
    scaled = {"spec": {**POOL["spec"], "minAvailable": 9, "maxUnready": 1, "updateStrategy": {"type": "Replace"}}}
    assert pool_revision.revision(scaled, [("p", {"template": {"enable": True}})]) == base
    changed = {"spec": {**POOL["spec"], "provider": {"name": "p", "parameterValues": {"a": 2, "b": 2}}}}
    assert pool_revision.revision(changed, [("p", {"template": {"enable": True}})]) != base
    assert pool_revision.revision(POOL, [("p", {"template": {"enable": False}})]) != base
    assert pool_revision.revision({"spec": {**POOL["spec"], "vars": {"x": 2}}},
                                  [("p", {"template": {"enable": True}})]) != base


def test_strategy_defaults_to_keep_and_scales_like_a_deployment() -> None:
    assert rollout.strategy({}) == Strategy()
    assert rollout.strategy({"updateStrategy": {"type": "Keep", "maxUnavailable": "x"}}) == Strategy()
    assert rollout.strategy({"minAvailable": 20, "updateStrategy": {"type": "Replace", "maxUnavailable": 2}}) == \
        Strategy(replace=True, max_unavailable=2, max_surge=5)
    assert rollout.strategy({"minAvailable": 10, "updateStrategy": {
        "type": "Replace", "maxUnavailable": "15%", "maxSurge": "15%"}}) == \
        Strategy(replace=True, max_unavailable=1, max_surge=2)
    assert rollout.strategy({"minAvailable": 2, "updateStrategy": {
        "type": "Replace", "maxUnavailable": 0, "maxSurge": 0}}) == Strategy(replace=True, max_surge=1)


@pytest.mark.parametrize(("strategy", "message"), [
    ({"type": "Recreate"}, "spec.updateStrategy.type: 'Recreate'"),
    ({"type": "Replace", "maxUnavailable": "ten"}, "spec.updateStrategy.maxUnavailable: 'ten'"),
    ({"type": "Replace", "maxSurge": -1}, "spec.updateStrategy.maxSurge: -1 is negative"),
])
def test_a_bad_strategy_names_the_field(strategy: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        rollout.strategy({"minAvailable": 4, "updateStrategy": strategy})


def ready(name: str, revision: str = "old", created: str = "") -> Member:
    return Member(name, revision, True, created)


def test_keep_or_up_to_date_plans_nothing() -> None:
    members = [ready("a"), ready("b")]
    assert rollout.plan(members, "new", 2, Strategy()) == Plan()
    assert rollout.plan([ready("a", "new")], "new", 1, Strategy(True, 1, 1)) == Plan()


def test_plan_deletes_oldest_ready_outdated_down_to_the_floor_and_unready_outdated_at_once() -> None:
    members = [ready("c", created="3"), ready("a", created="1"), ready("b", created="2"),
               Member("u", "old", False), ready("n", "new")]
    step = rollout.plan(members, "new", 4, Strategy(True, max_unavailable=1, max_surge=2))
    # 4 ready, floor 4 - 1 = 3: one ready outdated may go (the oldest); the unready outdated one goes anyway
    assert step == Plan(delete=("u", "a"), surge=2)
    last = rollout.plan([ready("a"), ready("n1", "new"), ready("n2", "new")], "new", 2, Strategy(True, 0, 1))
    assert last == Plan(delete=("a",), surge=0)


def test_a_rollout_simulated_to_the_end_never_drops_below_the_floor() -> None:
    """20 ready outdated handles, maxUnavailable 2: each step deletes, then creates (new ones become ready at
    the next step); ready never falls below 18 and every handle ends up current."""
    chosen = rollout.strategy({"minAvailable": 20, "updateStrategy": {"type": "Replace", "maxUnavailable": 2}})
    members = [ready(f"o{i:02d}", created=f"{i:02d}") for i in range(20)]
    serial = 0
    for _ in range(50):
        members = [Member(m.name, m.revision, True, m.created) for m in members]  # what was made is ready now
        step = rollout.plan(members, "new", 20, chosen)
        members = [m for m in members if m.name not in step.delete]
        assert sum(m.ready for m in members) >= 18
        while len(members) < 20 + step.surge:
            serial += 1
            members.append(Member(f"n{serial:02d}", "new", False, f"z{serial:02d}"))
        if not rollout.outdated(members, "new") and len(members) == 20:
            break
    assert [m.revision for m in members] == ["new"] * 20


def test_up_to_date_condition_text() -> None:
    assert rollout.up_to_date(0, 3, Strategy())[:2] == (True, "UpToDate")
    assert rollout.up_to_date(2, 3, Strategy(True, 1, 1))[:2] == (False, "RollingOut")
    assert rollout.up_to_date(2, 3, Strategy())[:2] == (False, "Outdated")

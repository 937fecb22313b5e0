"""The standby rules as an administrator declares them and a pool applies them (docs/behaviour.md#standby)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from poolboy.domain import matching, standby
from poolboy.domain.binding import candidates
from poolboy.domain.handle_state import RESUMING, RUNNING, STANDBY
from poolboy.utils.merge import merge_patch

STOP = {"spec": {"running": False}}


# --- the effective spec ------------------------------------------------------------------------------------------

def test_a_pool_without_standby_has_none_whatever_its_provider_declares() -> None:
    assert standby.effective(None, {"patch": STOP}) is None


def test_the_pools_fields_override_the_providers() -> None:
    spec = standby.effective({"running": 2, "resumeTimeout": "5s"},
                             {"patch": STOP, "resumeTimeout": "10m", "resumedCheck": "status.ready"})
    assert spec == standby.StandbySpec(running=2, patch=STOP, resume_patch=None, resumed_check="status.ready",
                                       resume_timeout=timedelta(seconds=5))


def test_the_resume_timeout_defaults_to_ten_minutes() -> None:
    spec = standby.effective({"running": 0, "patch": STOP}, None)
    assert spec is not None and spec.resume_timeout == timedelta(minutes=10) and spec.running == 0


@pytest.mark.parametrize(("pool", "provider", "says"), [
    ({"running": 1}, None, "no patch"),
    ({"running": 1}, {"patch": {}}, "no patch"),
    ({"running": 1, "patch": STOP, "resumeTimeout": "soon"}, None, "resumeTimeout"),
    ({"running": 1, "patch": STOP, "resumeTimeout": "0s"}, None, "longer than 0s"),
    ({"running": 1, "patch": {"spec": {"running": "{{ broken"}}}, None, "standby.patch: template syntax error"),
    ({"running": 1, "resumePatch": {"spec": ["{% if %}"]}}, {"patch": STOP}, "standby.resumePatch"),
    ({"running": 1, "resumedCheck": "status.ready ==="}, {"patch": STOP}, "standby.resumedCheck"),
])
def test_an_unusable_standby_says_what_is_wrong(pool: dict, provider: dict | None, says: str) -> None:
    with pytest.raises(standby.InvalidStandby, match=says):
        standby.effective(pool, provider)


def test_the_provider_is_the_pools_provider_or_its_first_resources() -> None:
    assert standby.provider_name({"spec": {"provider": {"name": "vm"}}}) == "vm"
    assert standby.provider_name({"spec": {"resources": [{"provider": {"name": "a"}}, {"provider": {"name": "b"}}]}}) \
        == "a"


# --- the pool's decision -----------------------------------------------------------------------------------------

def _member(name: str, created: int, *, ready: bool = True, state: str | None = RUNNING,
            wants: bool | None = False) -> standby.Member:
    return standby.Member(name=name, created=f"2026-01-01T00:00:0{created}Z", ready=ready, state=state,
                          wants_standby=wants)


def test_the_pool_keeps_running_the_oldest_ready_handles_and_puts_the_rest_on_standby() -> None:
    members = [_member("c", 3), _member("a", 1), _member("b", 2), _member("new", 4, ready=False, state=None)]
    assert standby.decide(members, 1) == {"a": False, "b": True, "c": True}  # the one provisioning is left alone


def test_the_pool_prefers_handles_already_running_over_waking_one() -> None:
    members = [_member("old", 1, state=STANDBY, wants=True), _member("young", 2)]
    assert standby.decide(members, 1) == {"young": False, "old": True}
    assert standby.changes(members, 1) == {}


def test_after_a_bind_took_the_running_handle_the_oldest_standby_one_resumes() -> None:
    members = [_member("b", 2, state=STANDBY, wants=True), _member("a", 1, state=STANDBY, wants=True)]
    assert standby.changes(members, 1) == {"a": False}


def test_a_handle_resuming_counts_as_running() -> None:
    members = [_member("a", 1, ready=False, state=RESUMING), _member("b", 2, state=STANDBY, wants=True)]
    assert standby.changes(members, 1) == {}


def test_a_ready_handle_the_pool_never_placed_is_told_to_run() -> None:
    assert standby.changes([_member("a", 1, state=None, wants=None), _member("b", 2, state=None, wants=None)], 1) \
        == {"a": False, "b": True}


def test_running_zero_puts_every_ready_handle_on_standby() -> None:
    assert standby.changes([_member("a", 1), _member("b", 2)], 0) == {"a": True, "b": True}


def test_the_counts_are_running_and_standby_handles() -> None:
    members = [_member("a", 1), _member("b", 2, state=STANDBY, wants=True), _member("c", 3, ready=False, state=None),
               _member("d", 4, state=None)]
    assert standby.counts(members) == {"running": 2, "standby": 1}


# --- the handle's state ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("state", "wants", "bound", "ready", "resumed", "then"), [
    (None, True, False, True, False, STANDBY),
    (RUNNING, True, False, False, False, RUNNING),  # still provisioning: not yet
    (RUNNING, True, True, True, False, RUNNING),  # bound meanwhile: the bind wins
    (RUNNING, False, False, True, False, RUNNING),
    (STANDBY, True, False, True, False, STANDBY),
    (STANDBY, True, True, True, False, RESUMING),  # bound while on standby
    (STANDBY, False, False, True, False, RESUMING),  # the pool wants it running
    (RESUMING, False, True, False, False, RESUMING),
    (RESUMING, False, True, False, True, RUNNING),
])
def test_a_handle_moves_between_running_standby_and_resuming(state: str | None, wants: bool, bound: bool,
                                                              ready: bool, resumed: bool, then: str) -> None:
    assert standby.next_state(state, wants_standby=wants, bound=bound, ready=ready, resumed=resumed) == then


def test_the_recorded_values_restore_what_the_patch_replaced() -> None:
    live = {"spec": {"running": True, "size": 2}, "metadata": {"name": "m"}}
    patch = {"spec": {"running": False, "paused": "yes"}, "metadata": {"labels": {"state": "off"}}}
    restore = standby.replaced_values(live, patch)
    assert restore == {"spec": {"running": True, "paused": None}, "metadata": {"labels": None}}
    assert merge_patch(merge_patch(live, patch), restore) == live


def test_holds_tells_a_patched_resource_from_one_to_patch() -> None:
    live = {"spec": {"running": False, "size": 2}}
    assert standby.holds(live, STOP)
    assert not standby.holds(live, {"spec": {"running": True}})
    assert standby.holds(live, {"spec": {"gone": None}})
    assert not standby.holds(live, {"spec": None})


def test_a_handle_past_its_resume_deadline_has_timed_out() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    resuming = standby.resuming_status(now, timedelta(seconds=5))
    handle = {"status": {"state": RESUMING, "resuming": resuming}}
    assert not standby.resume_timed_out(handle, now + timedelta(seconds=4))
    assert standby.resume_timed_out(handle, now + timedelta(seconds=5))
    assert not standby.resume_timed_out({"status": {"state": RUNNING, "resuming": resuming}}, now + timedelta(1))


# --- binding prefers a running handle ----------------------------------------------------------------------------

def _handle(name: str, state: str | None, created: str = "2026-01-01T00:00:00Z") -> dict:
    status: dict = {"ready": True, "healthy": True}
    if state:
        status["state"] = state
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"resources": []}, "status": status}


def test_a_running_handle_binds_before_an_older_one_on_standby() -> None:
    older_standby = _handle("a", STANDBY, "2026-01-01T00:00:00Z")
    running = _handle("b", RUNNING, "2026-01-02T00:00:00Z")
    resuming = _handle("c", RESUMING, "2026-01-01T00:00:00Z")
    ranked = sorted([older_standby, running, resuming], key=lambda h: matching.rank_key([], h))
    assert [h["metadata"]["name"] for h in ranked] == ["b", "c", "a"]


def test_handles_of_a_pool_without_standby_rank_as_before_and_summarise_without_new_keys() -> None:
    handle = _handle("a", None)
    assert matching.rank_key([], handle)[5] == 0
    assert not {"st", "sb"} & set(candidates.summary(handle, "poolboy.gpte.redhat.com"))
    on_standby = {**_handle("b", STANDBY), "spec": {"resources": [], "standby": True}}
    assert {"st": STANDBY, "sb": True}.items() <= candidates.summary(on_standby, "poolboy.gpte.redhat.com").items()


def test_a_handle_that_resumed_from_standby_is_no_measure_of_the_pools_time_to_ready() -> None:
    provisioned = {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
                   "status": {"ready": True, "conditions": [
                       {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:42Z"}]}}
    assert candidates.time_to_ready(provisioned) == 42
    # on standby for a day, then resumed: its Ready turned True when it resumed, not 86 442 s after its creation
    resumed = merge_patch(provisioned, {"status": {"state": RUNNING, "resumedAt": "2026-01-02T00:00:42Z",
                                                   "conditions": [{"type": "Ready", "status": "True",
                                                                   "lastTransitionTime": "2026-01-02T00:00:42Z"}]}})
    assert candidates.time_to_ready(resumed) is None
    assert candidates.summary(resumed, "poolboy.gpte.redhat.com")["rt"] is None

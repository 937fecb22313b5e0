"""``status.conditions`` helpers (poolboy.domain.conditions)."""

from __future__ import annotations

from datetime import UTC, datetime

from poolboy.domain import conditions

NOW = datetime(2024, 1, 10, 12, 0, 0, tzinfo=UTC)


def test_observe_stamps_only_the_conditions_the_run_decided() -> None:
    current = conditions.set_condition(None, "Ready", True, "ResourcesReady", "", NOW, 2)
    current = conditions.set_condition(current, "Synced", True, "Synced", "", NOW, 2)
    observed = conditions.observe(current, {"Synced"}, 3)
    assert {c["type"]: c["observedGeneration"] for c in observed} == {"Ready": 2, "Synced": 3}
    assert current[1]["observedGeneration"] == 2  # the input is left as it was


def test_observe_adds_the_field_to_a_condition_without_one() -> None:
    current = conditions.set_condition(None, "Ready", False, "Provisioning", "", NOW)
    assert "observedGeneration" not in current[0]
    assert conditions.observe(current, {"Ready"}, 1)[0]["observedGeneration"] == 1


def test_ordered_puts_the_named_types_first_and_keeps_the_rest_as_they_were() -> None:
    current: list = []
    for type_ in ("LifespanEnding", "Ready", "Bound", "Other", "Synced"):
        current = conditions.set_condition(current, type_, False, "R", "", NOW)
    ordered = conditions.ordered(current, ("Synced", "Bound", "Healthy", "Ready"))
    assert [c["type"] for c in ordered] == ["Synced", "Bound", "Ready", "LifespanEnding", "Other"]
    assert conditions.ordered(ordered, ("Synced", "Bound", "Healthy", "Ready")) == ordered


def test_a_run_that_sets_a_condition_twice_transitions_only_against_what_is_stored() -> None:
    """Synced=False stored; a run sets True, then False again when a later step fails: no transition happened, so
    the stored time stays (and the status the run writes is the one already there)."""
    stored = conditions.set_condition(None, "Synced", False, "StatusTooLarge", "too large", NOW)
    later = NOW.replace(second=1)
    draft = conditions.set_condition(stored, "Synced", True, "Synced", "", later, stored=stored)
    assert draft[0]["lastTransitionTime"] == "2024-01-10T12:00:01Z"  # True differs from what is stored
    final = conditions.set_condition(draft, "Synced", False, "StatusTooLarge", "too large", later, stored=stored)
    assert final == stored
    without_stored = conditions.set_condition(draft, "Synced", False, "StatusTooLarge", "too large", later)
    assert without_stored[0]["lastTransitionTime"] == "2024-01-10T12:00:01Z"  # measured against the draft


def test_a_condition_new_to_the_stored_ones_transitions_now() -> None:
    added = conditions.set_condition(None, "Ready", True, "ResourcesReady", "", NOW, stored=[])
    assert added[0]["lastTransitionTime"] == "2024-01-10T12:00:00Z"

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

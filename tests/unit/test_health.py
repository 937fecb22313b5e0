"""Health/readiness aggregation (docs/behaviour.md#health)."""

from __future__ import annotations

import pytest

from poolboy.domain import health


@pytest.mark.parametrize(("values", "expected"), [
    ([], None), ([True], True), ([True, None], None), ([True, False], False), ([None], None),
    ([None, False], False), ([True, True], True),
])
def test_aggregate(values, expected) -> None:
    assert health.aggregate(values) is expected


def test_resource_without_state_is_unknown_healthy_and_not_ready() -> None:
    assert health.resource_health("true", "true", None, {"metadata": {"name": "h"}}, {}) == (None, False)

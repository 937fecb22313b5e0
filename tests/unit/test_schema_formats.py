"""The draft-4 formats provider schemas rely on are checked. (That checking them costs nothing at start-up shows
only in a fresh interpreter: tests/integration/test_fresh_processes.py.)"""

from __future__ import annotations

import pytest

from poolboy.utils.schema import validate

_CASES = [
    ("date-time", "2024-01-01T10:00:00Z", "yesterday"),
    ("hostname", "db.example.com", "-bad-.example"),
    ("uri", "https://example.com/a?b=c", "not a uri"),
    ("ipv4", "10.0.0.1", "10.0.0.300"),
    ("email", "a@example.com", "nobody"),
]


@pytest.mark.parametrize(("fmt", "good", "bad"), _CASES)
def test_draft4_formats_are_checked(fmt: str, good: str, bad: str) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    assert validate({"v": good}, schema) == []
    errors = validate({"v": bad}, schema)
    assert errors and f"is not a '{fmt}'" in errors[0]

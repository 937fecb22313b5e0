"""The draft-4 formats provider schemas rely on are checked, and checking them costs nothing at start-up.

Every process (watcher, beat, each worker and prefork child) imports the schema module; a format library that
builds a parser at import (rfc3987-syntax's Lark grammar took 1.5 s) is paid by all of them for a format
(``iri``) that draft 4 does not have.
"""

from __future__ import annotations

import subprocess
import sys

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


def test_importing_the_schema_module_builds_no_grammar() -> None:
    code = "import sys, poolboy.utils.schema; print(sorted(m for m in ('lark', 'rfc3987_syntax') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

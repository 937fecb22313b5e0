"""The type annotations are checked: ``mypy`` over ``poolboy/``, ``redisscripts/``, ``cache/``,
``workqueue/``, ``engine/``, ``workers/``, ``watcher/``, ``procutil/``, ``controlplane/``, ``node/`` and
``poolboy_kubectl/`` (the ``[tool.mypy]``
section of pyproject.toml: stricter for ``poolboy/``), so
``./run tests`` — and so CI — fails on a type error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # about 30 s from a cold cache


def test_mypy_finds_no_type_errors() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, f"mypy found type errors:\n{result.stdout}{result.stderr}"

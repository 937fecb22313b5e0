"""The layers hold: each package imports only what lies below it, at module level or inside a function (pure: the
sources are read, nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package -> the packages it must never import (Celery stays in the adapter, ``workers/``)
FORBIDDEN: dict[str, set[str]] = {
    "poolboy": {"celery", "kombu", "redbeat", "redis", "workqueue", "cache", "engine", "workers", "watcher", "stack"},
    "workqueue": {"celery", "kombu", "kubernetes", "poolboy.kube", "cache", "engine", "workers", "watcher", "stack"},
    "cache": {"celery", "kombu", "workers", "watcher", "stack"},
    "engine": {"celery", "kombu", "redbeat", "workers", "watcher", "stack"},
    "watcher": {"celery", "kombu", "workers", "stack"},
    # the kubectl plugin is a client of the API: the user's machine runs it without Redis or the operator's adapters
    "poolboy_kubectl": {"celery", "kombu", "redbeat", "redis", "workqueue", "cache", "engine", "workers", "watcher",
                        "stack", "devcluster", "controlplane", "node"},
}


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, wherever the import stands."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_nothing_above_it(package: str) -> None:
    wrong = {f"{path.relative_to(ROOT)}: {module}"
             for path in sorted((ROOT / package).rglob("*.py"))
             for module in imported(path)
             if any(_within(module, above) for above in FORBIDDEN[package])}
    assert not wrong, sorted(wrong)

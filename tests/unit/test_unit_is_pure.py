"""``tests/unit`` is pure: no test here starts a process, forks, opens a socket or starts a server (a real Redis, a
devcluster, a worker). Such tests belong in ``tests/integration``, which docs/architecture.md (Layout) describes as
the place for them; this reads the unit tests' source for the ways in."""

from __future__ import annotations

import ast
from pathlib import Path

UNIT = Path(__file__).resolve().parent
#: modules whose import is a way to a process, a socket or a server
IMPURE_MODULES = ("subprocess", "socket", "multiprocessing", "psutil", "http.server", "urllib.request",
                  "stack.testing", "devcluster.testing", "procutil")
#: ``os`` functions that start or replace a process
IMPURE_OS_CALLS = ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "spawnv", "spawnl", "execv",
                   "execvp", "execl", "execlp")


def _impure(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in IMPURE_MODULES)


def impure_uses(source: str) -> list[str]:
    """The imports of :data:`IMPURE_MODULES` and the ``os`` calls of :data:`IMPURE_OS_CALLS` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {alias.name}" for alias in node.names if _impure(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and _impure(node.module):
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"from os import {alias.name}" for alias in node.names if alias.name in IMPURE_OS_CALLS]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                and node.attr in IMPURE_OS_CALLS:
            found.append(f"os.{node.attr}")
    return found


def test_the_check_sees_each_way_to_a_process_or_a_socket() -> None:
    source = ("import subprocess\nfrom stack.testing import RedisServer\nimport os\nos.fork()\n"
              "from socket import socket\nimport urllib.request\nfrom os import system")
    assert sorted(impure_uses(source)) == sorted(["import subprocess", "from stack.testing import ...", "os.fork",
                                                  "from socket import ...", "import urllib.request",
                                                  "from os import system"])
    assert impure_uses("import os\nimport threading\nfrom stack.supervisor import Supervisor\nos.getpid()") == []


def test_no_unit_test_starts_a_process_or_opens_a_socket() -> None:
    offenders = {path.name: uses for path in sorted(UNIT.glob("*.py")) if (uses := impure_uses(path.read_text()))}
    assert not offenders, f"move these to tests/integration, or make them pure: {offenders}"

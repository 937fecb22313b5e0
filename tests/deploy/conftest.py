"""Fixtures of the deployment checks: the real ``helm`` (pinned; scripts/deploy-tools.sh builds it into .venv/bin)
and a cached ``helm template`` of the chart for a set of values."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stack import service_accounts

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm"
NAMESPACE = "poolboy"
RELEASE = "pb"


def helm_binary() -> str:
    """:func:`stack.service_accounts.helm_binary`, failing the test where helm is missing."""
    try:
        return service_accounts.helm_binary()
    except FileNotFoundError as error:
        pytest.fail(str(error))


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm_binary(), *args], capture_output=True, text=True, timeout=60)


@functools.cache
def _render(values_json: str) -> tuple[dict[str, Any], ...]:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--include-crds"]
    for path, value in json.loads(values_json).items():
        args += ["--set-json", f"{path}={json.dumps(value)}"]
    result = helm(*args)
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The chart rendered with ``values`` (``{"a.b": value}`` as --set-json), one dict per manifest."""
    return list(_render(json.dumps(values or {}, sort_keys=True)))


def by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def containers(manifests: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Deployment name -> (pod spec, its first container)."""
    return {name: (d["spec"]["template"]["spec"], d["spec"]["template"]["spec"]["containers"][0])
            for name, d in by_kind(manifests, "Deployment").items()}

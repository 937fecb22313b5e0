"""The kubectl and helm that set-up installs (scripts/bootstrap.sh and scripts/deploy-tools.sh link them into
.venv/bin, which ./run puts first on PATH) are the pinned builds of kubetools/build.sh: kubectl at the control plane's
Kubernetes release, helm at the release that script names."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from stack import kubetools
from tests import tools

ROOT = Path(__file__).resolve().parents[2]


def kubernetes_release(module: str) -> str:
    """The k8s.io/kubernetes release a Go module of the project (``controlplane/go``, ``kubetools/go``) pins."""
    match = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", (ROOT / module / "go.mod").read_text(), re.M)
    assert match, f"{module}/go.mod requires no k8s.io/kubernetes"
    return match.group(1)


def helm_release() -> str:
    match = re.search(r"^HELM=(v\S+)$", kubetools.BUILD_SCRIPT.read_text(), re.M)
    assert match, f"{kubetools.BUILD_SCRIPT} names no HELM release"
    return match.group(1)


def installed(name: str) -> str:
    found = tools.find(name)
    assert found, f"set-up installed no {name}"
    return found


def test_kubectl_is_pinned_to_the_control_planes_release() -> None:
    assert kubernetes_release("kubetools/go") == kubernetes_release("controlplane/go")


@pytest.mark.kubectl
def test_the_installed_kubectl_is_the_pinned_build() -> None:
    result = subprocess.run([installed("kubectl"), "version", "--client", "-o", "json"],
                            capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(result.stdout)["clientVersion"]["gitVersion"] == kubernetes_release("kubetools/go")


@pytest.mark.helm
def test_the_installed_helm_is_the_pinned_build() -> None:
    result = subprocess.run([installed("helm"), "version", "--short"],
                            capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == helm_release()

"""``helm install`` for real: the chart with its defaults on a node, every pod Running and Ready by its own probes
under PodSecurity ``restricted``, the components talking through their Services and the ServiceAccount tokens the
kubelet mounts, and the examples giving a Ready claim through the deployed system."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from controlplane.testing import ControlPlane
from node.launcher import Node
from tests.controlplane.helm_release import Release
from tests.node.deployed import NAMESPACE, V1, D, pods, ready, restarts, startup_seconds
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.helm]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COMPONENTS = ("watcher", "worker-claims", "worker-handles", "worker-pools", "worker-periodic", "beat", "redis")


def test_the_node_is_ready_and_runs_containerd(control_plane: ControlPlane, node: Node) -> None:
    found = control_plane.request("GET", "/api/v1/nodes")["items"]
    assert [n["metadata"]["name"] for n in found] == ["poolboy-node"]
    info = found[0]["status"]["nodeInfo"]
    assert info["containerRuntimeVersion"].startswith("containerd://2."), info
    assert info["kubeletVersion"] == "v1.37.2"


def test_every_pod_of_the_default_install_runs_and_is_ready(control_plane: ControlPlane, release: Release) -> None:
    namespace = control_plane.request("GET", f"/api/v1/namespaces/{NAMESPACE}")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    found = pods(control_plane)
    names = sorted(p["metadata"]["name"] for p in found)
    for component in COMPONENTS:
        assert any(name.startswith(f"poolboy-{component}-") for name in names), f"no {component} pod in {names}"
    assert all(ready(p) for p in found), [p["metadata"]["name"] for p in found if not ready(p)]
    # Ready by its own probes, once: no container was restarted (a failing startup or liveness probe restarts it)
    assert {p["metadata"]["name"]: restarts(p) for p in found if any(n for n, _ in restarts(p).values())} == {}
    print("\npod start-up (creation to Ready): " + ", ".join(
        f"{p['metadata']['name'].rsplit('-', 2)[0]} {startup_seconds(p):.1f}s" for p in found))


def test_the_examples_give_a_ready_claim_through_the_deployed_system(control_plane: ControlPlane,
                                                                     release: Release) -> None:
    applied = subprocess.run(["kubectl", "--kubeconfig", str(control_plane.kubeconfig), "apply", "-f",
                              str(EXAMPLES)], capture_output=True, text=True, timeout=60)
    assert applied.returncode == 0, applied.stderr
    path = f"/apis/{D}/{V1}/namespaces/demo/resourceclaims/hello"

    def claim_ready() -> dict | None:
        claim = control_plane.request("GET", path)
        conditions = (claim.get("status") or {}).get("conditions") or []
        return claim if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else None

    claim = wait_for(claim_ready, timeout=60, interval=0.5, message="the example claim Ready")
    state = claim["status"]["resources"][0]["state"]
    assert state["kind"] == "ConfigMap" and state["data"] == {"greeting": "hello"}

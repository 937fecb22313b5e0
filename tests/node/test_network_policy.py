"""The chart's NetworkPolicies, enforced (kube-router's policy controller on the node): the system works with them
(DNS, Redis and the API server admitted), the documented traffic is admitted and the rest refused: Redis only from
the release's own pods, the health port from anywhere (the kubelet probes it), metrics from the monitoring
namespace only."""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.error
from collections.abc import Iterator

import pytest

from controlplane.testing import ControlPlane
from node import host
from node.launcher import Node
from node.network_policy import NetworkPolicies
from tests.controlplane.helm_release import Release
from tests.e2e.provider_support import config_map_provider
from tests.node.conftest import wait
from tests.node.deployed import V1, D, node_values, pods, settle
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.helm, pytest.mark.timeout(900)]
ROLLOUT = 240
#: tries each target: an "open" one until it connects, then a "closed" one several times (all must fail); a closed
#: target is only tried once an open one connected, so the policy controller knew the probe pod by then
PROBE = """
import json, socket, sys, time
def connects(host, port):
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        return True
    except OSError:
        return False
result = {}
for target in sys.argv[1:]:
    host, port, expect = target.rsplit(":", 2)
    tries = 20 if expect == "open" else 3
    result[target] = any(connects(host, port) or time.sleep(1) for _ in range(tries))
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def policies() -> NetworkPolicies:
    return NetworkPolicies()


@pytest.fixture(scope="module")
def enforced(control_plane: ControlPlane, node: Node, release: Release,
             policies: NetworkPolicies) -> Iterator[Node]:
    policies.start(node)
    try:
        # the node's DNS is no pod: the policies admit it by address
        release.upgrade(node_values(node, networkPolicy={"dns": {"cidrs": [f"{node.layout.node_ip}/32"]}}),
                        *wait(ROLLOUT), timeout=ROLLOUT + 30)
        settle(control_plane)
        yield node
    finally:
        policies.stop(node)
        release.upgrade(node_values(node), *wait(ROLLOUT), timeout=ROLLOUT + 30)
        settle(control_plane)


def probe(cluster: ControlPlane, namespace: str, targets: list[str]) -> dict[str, bool]:
    """Whether each ``host:port:expect`` target connects, from a pod in ``namespace`` (made if missing)."""
    with contextlib.suppress(urllib.error.HTTPError):  # 409: there already
        cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    name = "probe"
    cluster.request("POST", f"/api/v1/namespaces/{namespace}/pods", {"metadata": {"name": name}, "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "probe", "image": "poolboy-celery:0.1.0", "imagePullPolicy": "Never",
                        "command": ["python3", "-c", PROBE, *targets]}]}})
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    wait_for(lambda: cluster.request("GET", path)["status"].get("phase") in ("Succeeded", "Failed"), timeout=120,
             interval=0.5, message=f"the probe pod in {namespace} done")
    output = cluster.request("GET", f"{path}/log")  # the probe's one line of JSON, decoded
    cluster.request("DELETE", path)
    wait_for(lambda: name not in {p["metadata"]["name"] for p in pods(cluster, namespace)}, timeout=60,
             interval=0.5, message="the probe pod gone")
    return dict(output if isinstance(output, dict) else json.loads(output.strip().splitlines()[-1]))


def test_claims_bind_with_the_policies_enforced(control_plane: ControlPlane, enforced: Node) -> None:
    control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": "np-claims"}})
    control_plane.request("POST", f"/apis/{D}/{V1}/namespaces/poolboy/resourceproviders", {
        "apiVersion": f"{D}/{V1}", "kind": "ResourceProvider", "metadata": {"name": "np"},
        "spec": config_map_provider("np-claims")})
    control_plane.request("POST", f"/apis/{D}/{V1}/namespaces/np-claims/resourceclaims", {
        "apiVersion": f"{D}/{V1}", "kind": "ResourceClaim", "metadata": {"name": "np"},
        "spec": {"provider": {"name": "np", "parameterValues": {}}}})

    def ready() -> bool:
        claim = control_plane.request("GET", f"/apis/{D}/{V1}/namespaces/np-claims/resourceclaims/np")
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in (claim.get("status") or {}).get("conditions") or [])

    try:
        wait_for(ready, timeout=90, interval=0.5, message="a claim Ready with the policies enforced")
    except AssertionError:
        claim = control_plane.request("GET", f"/apis/{D}/{V1}/namespaces/np-claims/resourceclaims/np")
        logs = {p["metadata"]["name"]: control_plane.request(
            "GET", f"/api/v1/namespaces/poolboy/pods/{p['metadata']['name']}/log?tailLines=5")
            for p in pods(control_plane) if "watcher" in p["metadata"]["name"] or "claims" in p["metadata"]["name"]}
        raise AssertionError(f"claim status {claim.get('status')}; logs {logs}") from None


def test_only_the_documented_traffic_reaches_the_release(control_plane: ControlPlane, enforced: Node) -> None:
    watcher = next(p for p in pods(control_plane) if p["metadata"]["name"].startswith("poolboy-watcher-"))
    ip = watcher["status"]["podIP"]
    redis = "poolboy-redis.poolboy.svc.cluster.local:6379"
    outsider = probe(control_plane, "np-outsider", [f"{ip}:8081:open", f"{redis}:closed", f"{ip}:9090:closed"])
    assert outsider == {f"{ip}:8081:open": True, f"{redis}:closed": False, f"{ip}:9090:closed": False}
    monitoring = probe(control_plane, "monitoring", [f"{ip}:9090:open", f"{redis}:closed"])
    assert monitoring == {f"{ip}:9090:open": True, f"{redis}:closed": False}


def test_stopping_the_controller_removes_its_rules(control_plane: ControlPlane, enforced: Node,
                                                   policies: NetworkPolicies) -> None:
    """Rules left behind with nobody keeping their pod sets current would refuse every pod started later."""
    policies.stop(enforced)
    saved = subprocess.run(host.in_netns(enforced.layout, ["iptables-save"]), capture_output=True, text=True,
                           check=True).stdout
    assert [line for line in saved.splitlines() if "KUBE-ROUTER" in line or "KUBE-NWPLCY" in line] == []
    assert "KUBE-SERVICES" in saved, "kube-proxy's rules went too"
    redis = "poolboy-redis.poolboy.svc.cluster.local:6379"
    assert probe(control_plane, "np-later", [f"{redis}:open"]) == {f"{redis}:open": True}

"""``kubectl scale resourcepool/NAME --replicas=N`` on the running stack: the pool's scale subresource maps
``spec.minAvailable``, and reads back the available (unbound) handles and a selector of exactly those handles.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from stack.local import LocalStack
from tests.e2e.provider_support import NS, D, User, config_map_provider, status
from tests.waiting import wait_for

pytestmark = [pytest.mark.kubectl]


def kubectl(stack: LocalStack, *args: str) -> str:
    result = subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), "-n", NS, *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}\n{stack.logs()}"
    return result.stdout


def unbound(user: User, pool: str) -> set[str]:
    return {h["metadata"]["name"] for h in user.pool_handles(pool)}


def test_kubectl_scale_sets_min_available_and_the_pool_refills(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("scale")
    user.provider("p-scale", config_map_provider(ns))
    user.pool("pool-scale", {"minAvailable": 1, "provider": {"name": "p-scale", "parameterValues": {}}})
    wait_for(lambda: len(unbound(user, "pool-scale")) == 1, timeout=15, message="pool of 1")

    assert "scaled" in kubectl(stack, "scale", "resourcepool/pool-scale", "--replicas=3")
    assert (user.get_pool("pool-scale") or {})["spec"]["minAvailable"] == 3
    wait_for(lambda: len(unbound(user, "pool-scale")) == 3, timeout=15, message="pool refilled to 3")
    wait_for(lambda: status(user.get_pool("pool-scale")).get("replicas") == 3, timeout=15,
             message="pool status.replicas 3")

    scale = json.loads(kubectl(stack, "get", "resourcepool/pool-scale", "--subresource=scale", "-o", "json"))
    assert (scale["kind"], scale["spec"]["replicas"], scale["status"]["replicas"]) == ("Scale", 3, 3)
    selector = scale["status"]["selector"]
    assert selector == f"{D}/resource-pool-name=pool-scale,!{D}/resource-claim-name,!{D}/resource-handle-cleaning"
    assert {h["metadata"]["name"] for h in user.handles(selector)} == unbound(user, "pool-scale")
    assert "pool-scale" in kubectl(stack, "get", "resourcepool/pool-scale", "--subresource=scale")

    # a bound handle leaves the selection and the count; the pool replaces it
    user.claim(ns, "c", {"provider": {"name": "p-scale", "parameterValues": {}}})
    bound = user.wait_bound(ns, "c")["status"]["resourceHandle"]["name"]
    wait_for(lambda: len(unbound(user, "pool-scale")) == 3 and bound not in unbound(user, "pool-scale"),
             timeout=15, message="pool replaced the bound handle")
    assert bound not in {h["metadata"]["name"] for h in user.handles(selector)}

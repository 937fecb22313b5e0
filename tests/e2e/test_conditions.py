"""Conditions on handles, pools and scalings, as an administrator's ``kubectl wait`` sees them on the running stack.

docs/users.md: "Handles carry ``Ready``, ``Healthy`` and ``Synced``; pools carry ``Ready`` (minAvailable met)",
each with ``observedGeneration``, so ``kubectl wait --for=condition=Ready resourcehandle/<n>`` (and
``resourcepool/<n>``, ``resourcepoolscaling/<n>``) returns once the object is there.
"""

from __future__ import annotations

import pytest

from stack.local import LocalStack
from tests.e2e.provider_support import NS, D, User, condition, config_map_provider, kubectl
from tests.waiting import wait_for

pytestmark = [pytest.mark.kubectl]


def wait_condition(stack: LocalStack, resource: str, type_: str = "Ready", timeout: int = 20) -> None:
    waited = kubectl(stack, "wait", f"--for=condition={type_}", f"--timeout={timeout}s", "-n", NS, resource)
    assert waited.returncode == 0, f"{resource}: {waited.stderr}\n{stack.logs()}"


def test_kubectl_wait_ready_on_pool_handle_and_scaling(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("cond")
    user.provider("p-cond", config_map_provider(ns))
    user.pool("pool-cond", {"minAvailable": 2, "provider": {"name": "p-cond", "parameterValues": {}}})

    wait_condition(stack, "resourcepool/pool-cond")
    pool = user.get_pool("pool-cond") or {}
    ready = condition(pool, "Ready")
    assert ready["status"] == "True" and ready["reason"] == "MinAvailable"
    assert ready["observedGeneration"] == pool["metadata"]["generation"]
    assert pool["status"]["resourceHandleCount"]["available"] == 2

    handles = wait_for(lambda: user.pool_handles("pool-cond"), timeout=10, message="pool handles")
    name = handles[0]["metadata"]["name"]
    wait_condition(stack, f"resourcehandle/{name}")
    wait_condition(stack, f"resourcehandle/{name}", "Healthy")
    wait_condition(stack, f"resourcehandle/{name}", "Synced")
    handle = user.get_handle(name) or {}
    for type_ in ("Ready", "Healthy", "Synced"):
        assert condition(handle, type_)["observedGeneration"] == handle["metadata"]["generation"], type_

    # raising minAvailable: Ready goes False (Replenishing) at the new generation, then True again
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", "pool-cond", {"spec": {"minAvailable": 3}})
    wait_condition(stack, "resourcepool/pool-cond")
    pool = user.get_pool("pool-cond") or {}
    assert condition(pool, "Ready")["observedGeneration"] == pool["metadata"]["generation"]
    assert pool["status"]["resourceHandleCount"]["available"] >= 3

    # a scaling is Ready once done; waiting/scaling show in its reason
    user.custom.create_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", {
        "apiVersion": f"{D}/v1", "kind": "ResourcePoolScaling", "metadata": {"name": "scale-cond", "namespace": NS},
        "spec": {"resourcePool": {"name": "pool-cond"}, "count": 1}})
    wait_condition(stack, "resourcepoolscaling/scale-cond")
    scaling = user.custom.get_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", "scale-cond")
    assert scaling["status"]["state"] == "done" and condition(scaling, "Ready")["reason"] == "Done"

"""Provider pools on the running stack (docs/behaviour.md#binding, #lifespans, #pools, #scalings), as an administrator
and a user see them.

Every scenario has its own provider, pool and namespace; the pools are small so each scenario takes seconds.
"""

from __future__ import annotations

from datetime import timedelta

from stack.local import LocalStack
from tests.e2e.provider_support import (
    NS,
    V1,
    D,
    User,
    condition,
    config_map_provider,
    parse,
    status,
    timestamp,
)
from tests.waiting import wait_for


def pool_spec(provider: str, min_available: int, **extra: object) -> dict:
    return {"minAvailable": min_available, "provider": {"name": provider, "parameterValues": {"greeting": "pool"}},
            **extra}


def wait_pool_handles(user: User, pool: str, count: int, timeout: float = 15.0, exact: bool = False) -> list[dict]:
    def enough() -> list[dict] | None:
        handles = user.pool_handles(pool)
        ok = len(handles) == count if exact else len(handles) >= count
        return handles if ok else None

    return wait_for(enough, timeout=timeout, interval=0.1, message=f"pool {pool}: {count} unbound handles")


def handle_config_map(user: User, handle: str, namespace: str) -> str:
    def name() -> str | None:
        resources = status(user.get_handle(handle)).get("resources") or []
        return ((resources[0] if resources else {}).get("reference") or {}).get("name")

    cm = wait_for(name, timeout=15, interval=0.1, message=f"handle {handle} resource reference")
    wait_for(lambda: user.config_map(namespace, cm), timeout=15, message=f"ConfigMap {cm}")
    return cm


# --- docs/behaviour.md#binding binding from a provider pool
# ------------------------------------------------------------------------


def test_claim_binds_a_pool_handle_and_the_pool_refills(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("poolbind")
    user.provider("pp-bind", config_map_provider(ns, lifespan={"default": "2h", "unclaimed": "1h"}))
    user.pool("pool-bind", pool_spec("pp-bind", 2))
    handles = wait_pool_handles(user, "pool-bind", 2)
    for handle in handles:
        created = parse(handle["metadata"]["creationTimestamp"])
        # the pool's run computes the end from its own now, the API stamps the creation a moment later
        assert timedelta(hours=1) - timedelta(seconds=2) <= parse(handle["spec"]["lifespan"]["end"]) - created \
            <= timedelta(hours=1)
    pool_names = {h["metadata"]["name"] for h in handles}

    user.claim(ns, "same", {"provider": {"name": "pp-bind", "parameterValues": {"greeting": "pool"}}})
    user.claim(ns, "other", {"provider": {"name": "pp-bind", "parameterValues": {"greeting": "mine"}}})
    same = user.wait_bound(ns, "same")
    other = user.wait_bound(ns, "other")
    assert same["status"]["resourceHandle"]["name"] in pool_names
    assert other["status"]["resourceHandle"]["name"] not in pool_names  # different template: a new handle

    handle = user.get_handle(same["status"]["resourceHandle"]["name"])
    assert handle["spec"]["resourceClaim"]["name"] == "same"
    assert handle["spec"]["provider"] == {"name": "pp-bind", "parameterValues": {"greeting": "pool"}}
    lifespan = status(same)["lifespan"]
    assert parse(handle["spec"]["lifespan"]["end"]) - parse(lifespan["start"]) == timedelta(hours=2)

    wait_for(lambda: len(user.pool_handles("pool-bind")) >= 2, timeout=6, message="pool refilled at once")
    wait_for(lambda: status(user.get_pool("pool-bind")).get("resourceHandleCount", {}).get("available") == 2,
             timeout=10, message="pool status counts 2 available")


def test_disable_creation_waits_then_binds_when_a_pool_handle_appears(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("nocreate")
    user.provider("pp-nocreate", config_map_provider(ns, disableCreation=True))
    user.claim(ns, "c", {"provider": {"name": "pp-nocreate", "parameterValues": {"greeting": "pool"}}})
    claim = user.wait_claim(ns, "c", lambda c: condition(c, "Bound").get("reason") == "NoMatchingHandle",
                            message="Bound=False NoMatchingHandle")
    assert "resourceHandle" not in status(claim)
    assert not user.handles(f"{D}/resource-claim-namespace={ns}")

    user.pool("pool-nocreate", pool_spec("pp-nocreate", 1))
    claim = user.wait_bound(ns, "c", timeout=4)  # well before the claim's periodic re-check
    handle = user.get_handle(claim["status"]["resourceHandle"]["name"])
    assert handle["metadata"]["labels"][f"{D}/resource-pool-name"] == "pool-nocreate"
    assert condition(claim, "Bound")["status"] == "True"


# --- docs/behaviour.md#pools pools
# ----------------------------------------------------------------------------------------------


def test_max_unready_limits_creation_until_handles_become_ready(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("unready")
    user.provider("pp-unready", config_map_provider(ns, readinessCheck="data.ready | default('') == 'yes'",
                                                    updateFilters=[{"pathMatch": "/data/greeting"}]))
    user.pool("pool-unready", pool_spec("pp-unready", 3, maxUnready=1))
    first = wait_pool_handles(user, "pool-unready", 1)
    # the pool has reconciled with one unready handle: its status says so, and nothing more was created
    wait_for(lambda: status(user.get_pool("pool-unready")).get("resourceHandleCount") == {
        "available": 1, "ready": 0, "updated": 1, "outdated": 0},
             timeout=10, message="pool status 1 available, 0 ready")
    assert len(user.pool_handles("pool-unready")) == 1

    cm = handle_config_map(user, first[0]["metadata"]["name"], ns)
    user.core.patch_namespaced_config_map(cm, ns, {"data": {"ready": "yes"}})
    handles = wait_pool_handles(user, "pool-unready", 2, timeout=10)
    assert len(handles) == 2  # the second is unready again, so the third waits


def test_unhealthy_pool_handles_are_deleted_and_replaced(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("unhealthy")
    user.provider("pp-unhealthy", config_map_provider(ns, healthCheck="data.broken is not defined",
                                                      updateFilters=[{"pathMatch": "/data/greeting"}]))
    user.pool("pool-unhealthy", pool_spec("pp-unhealthy", 1, deleteUnhealthyResourceHandles=True))
    original = wait_pool_handles(user, "pool-unhealthy", 1)[0]["metadata"]["name"]
    cm = handle_config_map(user, original, ns)
    user.core.patch_namespaced_config_map(cm, ns, {"data": {"broken": "1"}})
    wait_for(lambda: user.get_handle(original) is None, timeout=10, message="unhealthy handle deleted")
    wait_for(lambda: user.config_map(ns, cm) is None, timeout=10, message="its ConfigMap deleted")
    replacement = wait_pool_handles(user, "pool-unhealthy", 1)
    assert replacement[0]["metadata"]["name"] != original


def test_deleting_a_pool_deletes_unbound_handles_and_keeps_bound_ones(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("pooldel")
    user.provider("pp-del", config_map_provider(ns))
    user.pool("pool-del", pool_spec("pp-del", 2))
    wait_pool_handles(user, "pool-del", 2)
    user.claim(ns, "c", {"provider": {"name": "pp-del", "parameterValues": {"greeting": "pool"}}})
    bound = user.wait_bound(ns, "c")["status"]["resourceHandle"]["name"]
    wait_pool_handles(user, "pool-del", 2)
    user.custom.delete_namespaced_custom_object(D, "v1", NS, "resourcepools", "pool-del")
    wait_for(lambda: not user.pool_handles("pool-del"), timeout=10, message="unbound pool handles deleted")
    wait_for(lambda: user.get_pool("pool-del") is None, timeout=10, message="pool gone")
    handle, claim = user.get_handle(bound), user.get_claim(ns, "c")
    assert handle is not None and not handle["metadata"].get("deletionTimestamp")  # kept, not being deleted
    assert claim is not None and condition(claim, "Bound").get("status") == "True"


# --- docs/behaviour.md#scalings scalings
# -------------------------------------------------------------------------------------------


def test_scaling_with_a_future_at_waits_then_adds_handles(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("scaling")
    user.provider("pp-scale", config_map_provider(ns))
    user.pool("pool-scale", pool_spec("pp-scale", 1))
    wait_pool_handles(user, "pool-scale", 1)
    at = timestamp(timedelta(seconds=4))
    user.custom.create_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", {
        "apiVersion": V1, "kind": "ResourcePoolScaling", "metadata": {"name": "scale-later", "namespace": NS},
        "spec": {"resourcePool": {"name": "pool-scale"}, "count": 2, "at": at}})

    def scaling() -> dict:
        return user.custom.get_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", "scale-later")

    wait_for(lambda: status(scaling()).get("state") == "waiting", timeout=10, message="scaling waiting")
    if parse(timestamp()) < parse(at):
        assert len(user.pool_handles("pool-scale")) == 1
    done = wait_for(lambda: status(scaling()).get("state") == "done" and scaling(), timeout=15,
                    message="scaling done")
    assert status(done)["count"] == 2
    assert done["metadata"]["ownerReferences"][0]["name"] == "pool-scale"
    scaled = user.handles(f"{D}/resource-pool-scaling-name=scale-later")
    assert len(scaled) == 2
    assert all(parse(h["metadata"]["creationTimestamp"]) >= parse(at) for h in scaled)
    assert len(user.pool_handles("pool-scale")) == 3

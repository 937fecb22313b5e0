"""Released pool handles cleaned and returned to their pool (docs/pools.md, "Reuse"; docs/behaviour.md#deletion), as
an administrator and a user see them on the real control plane.

The managed resources are ``Machine`` objects whose controller (and janitor) is :mod:`tests.standin`: the cleanup
patch asks for a wipe (``spec.wipeRequest``), the janitor does it (``status.wiped``), and ``cleanedCheck`` waits for
it; a Machine labelled ``standin.poolboy.test/stuck`` is never wiped.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from stack.local import LocalStack
from tests import standin
from tests.e2e.provider_support import NS, D, User, condition, kubectl, parse, status
from tests.waiting import wait_for

REUSE = {"cleanupPatch": {"spec": {"wipeRequest": "{{ guid }}-{{ resource_handle.status.cleaning.since }}"}},
         "cleanedCheck": "status.wiped is defined and status.wiped == spec.wipeRequest"}


def machine_provider(namespace: str, reuse: dict[str, Any] | None) -> dict[str, Any]:
    """Machines whose ``spec.owner`` is the claim's name (a claim-specific value), ``pool`` while unclaimed."""
    spec: dict[str, Any] = {
        "override": {"apiVersion": standin.API_VERSION, "kind": standin.KIND,
                     "metadata": {"name": "m-{{ guid }}", "namespace": namespace},
                     "spec": {"owner": "{{ resource_claim.metadata.name if resource_claim else 'pool' }}"}},
        "template": {"enable": True},
        "updateFilters": [{"pathMatch": "/spec/owner", "allowedOps": ["add", "replace"]}],
        "healthCheck": "true",
        "readinessCheck": "status.ready | default(false)",
    }
    if reuse is not None:
        spec["reuse"] = reuse
    return spec


@pytest.fixture(scope="module")
def machines(stack: LocalStack) -> Iterator[User]:
    """A user whose cluster runs Machines, and Poolboy allowed to manage them."""
    user = User(stack)
    api_client: client.ApiClient = user.custom.api_client
    stack.grant(standin.GRANT)
    standin.install_crd(api_client)
    with standin.StandInController(api_client, boot_seconds=0.5, wipe_seconds=0.3).running():
        yield user


def machine(user: User, handle: dict[str, Any]) -> dict[str, Any] | None:
    return standin.machine_of(user.custom, handle)


def label_stuck(user: User, found: dict[str, Any], stuck: bool) -> None:
    metadata = found["metadata"]
    labels = {standin.STUCK_LABEL: "yes" if stuck else None}
    user.custom.patch_namespaced_custom_object(standin.GROUP, standin.VERSION, metadata["namespace"], standin.PLURAL,
                                               metadata["name"], {"metadata": {"labels": labels}})


def ready_pool_handles(user: User, pool: str, count: int) -> list[dict[str, Any]]:
    return user.wait_ready_pool_handles(pool, count, resource_of=lambda h: machine(user, h))


def wait_handle(user: User, name: str, predicate: Any, message: str, timeout: float = 15) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        handle = user.get_handle(name)
        return handle if handle is not None and predicate(handle) else None

    return wait_for(check, timeout=timeout, interval=0.1, message=f"handle {name}: {message}")


def wait_event(user: User, name: str, reason: str) -> Any:
    return wait_for(lambda: next((e for e in user.events(NS, name) if e.reason == reason), None), timeout=10,
                    interval=0.2, message=f"Event {reason} on handle {name}")


def bind(user: User, namespace: str, claim: str, provider: str) -> dict[str, Any]:
    user.claim(namespace, claim, {"provider": {"name": provider, "parameterValues": {}}})
    return user.wait_claim(namespace, claim, lambda c: status(c).get("ready") is True, timeout=20,
                           message="bound and ready")


def test_a_released_handle_is_cleaned_counted_as_coming_and_bound_again(machines: User) -> None:
    user = machines
    ns = user.namespace("reuse")
    user.provider(f"{ns}-vm", machine_provider(ns, {**REUSE, "cleanupTimeout": "2m"}))
    user.pool(f"{ns}-labs", {"minAvailable": 1, "provider": {"name": f"{ns}-vm", "parameterValues": {}},
                             "lifespan": {"unclaimed": "1h"}})
    first = ready_pool_handles(user, f"{ns}-labs", 1)[0]
    name = first["metadata"]["name"]
    assert status(first)["state"] == "Running"  # a pool handle of a provider that reuses shows its state
    claim = bind(user, ns, "first", f"{ns}-vm")
    assert status(claim)["resourceHandle"]["name"] == name
    used = wait_for(lambda: (m := machine(user, user.get_handle(name) or {})) and m["spec"]["owner"] == "first" and m,
                    timeout=10, message="the Machine serves the claim")
    ready_pool_handles(user, f"{ns}-labs", 1)  # the pool refilled: one other unbound handle

    # the claim goes while the janitor is held back: the handle is released into cleaning, not deleted
    label_stuck(user, used, True)
    user.delete_claim(ns, "first")
    handle = wait_handle(user, name, lambda h: status(h).get("state") == "Cleaning", "Cleaning")
    assert "resourceClaim" not in handle["spec"]
    assert handle["metadata"]["labels"][f"{D}/resource-handle-cleaning"] == "true"
    assert f"{D}/resource-claim-name" not in handle["metadata"]["labels"]
    assert status(handle)["cleaning"]["claim"] == {"namespace": ns, "name": "first"}
    assert parse(status(handle)["cleaning"]["deadline"]) - parse(status(handle)["cleaning"]["since"]) \
        == timedelta(minutes=2)
    wiping = wait_for(lambda: (m := machine(user, handle)) and m["spec"].get("wipeRequest") and m, timeout=10,
                      message="the cleanup patch asks for a wipe")
    assert wiping["metadata"]["uid"] == used["metadata"]["uid"]  # the same Machine, kept
    assert wait_event(user, name, "Cleaning").message.startswith(f"Released by ResourceClaim {ns}/first")
    shown = kubectl(user.stack, "get", "resourcehandle", name, "-n", NS)  # what an administrator sees
    assert shown.returncode == 0 and "STATE" in shown.stdout and "Cleaning" in shown.stdout, shown

    # the pool counts the cleaning handle as coming: asked for two, it makes none while one cleans
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", f"{ns}-labs",
                                               {"spec": {"minAvailable": 2}})
    pool = wait_for(lambda: (p := user.get_pool(f"{ns}-labs")) and condition(p, "Ready").get("message")
                    == "1 of 2 required handles available." and status(p)["resourceHandleCount"].get("cleaning") == 1
                    and p, timeout=15, message="the pool counts 1 available and 1 cleaning of 2")
    assert status(pool)["resourceHandleCount"]["available"] == 1
    assert len(user.pool_handles(f"{ns}-labs", unbound_only=False)) == 2  # nothing created meanwhile

    # the janitor finishes: the handle is unbound and fresh again, and fills the pool
    label_stuck(user, wiping, False)
    fresh = wait_handle(user, name, lambda h: status(h).get("state") == "Running", "Running again")
    returned = datetime.now(UTC)
    assert f"{D}/resource-handle-cleaning" not in fresh["metadata"]["labels"]
    assert "cleaning" not in status(fresh) and "resourceClaim" not in fresh["spec"]
    # a new unclaimed lifespan, as the pool gives a new handle
    assert timedelta(minutes=59) < parse(fresh["spec"]["lifespan"]["end"]) - returned <= timedelta(hours=1)
    wait_event(user, name, "Reused")
    wait_for(lambda: (m := machine(user, fresh)) and m["spec"]["owner"] == "pool", timeout=10,
             message="the Machine's claim-specific value is restored")
    pool = wait_for(lambda: (p := user.get_pool(f"{ns}-labs")) and status(p)["resourceHandleCount"] ==
                    {**status(p)["resourceHandleCount"], "available": 2, "ready": 2, "cleaning": 0} and p,
                    timeout=15, message="the pool counts 2 available, none cleaning")
    both = user.pool_handles(f"{ns}-labs", unbound_only=False)
    assert len(both) == 2

    # new claims bind the reused handle again: first the one ranked first (older creationTimestamp, then name: the
    # refill may have been created in the same second), then the other; its Machine is the same object
    first_ranked = min(both, key=lambda h: (h["metadata"]["creationTimestamp"], h["metadata"]["name"]))
    claims = [bind(user, ns, claim_name, f"{ns}-vm") for claim_name in ("second", "third")]
    assert status(claims[0])["resourceHandle"]["name"] == first_ranked["metadata"]["name"]
    assert {status(c)["resourceHandle"]["name"] for c in claims} == {h["metadata"]["name"] for h in both}
    rebound = machine(user, user.get_handle(name) or {})
    assert rebound is not None and rebound["metadata"]["uid"] == used["metadata"]["uid"]


def test_failed_cleaning_deletes_the_handle_and_no_reuse_deletes_as_always(machines: User) -> None:
    user = machines
    ns = user.namespace("reuse-fail")
    user.provider(f"{ns}-slow", machine_provider(ns, {**REUSE, "cleanupTimeout": "5s"}))
    user.provider(f"{ns}-broken", machine_provider(ns, {"cleanupPatch": {"spec": {"wipeRequest": "{{ no_such }}"}}}))
    user.provider(f"{ns}-plain", machine_provider(ns, None))
    pools = ("slow", "broken", "plain")
    for pool in pools:
        user.pool(f"{ns}-{pool}", {"minAvailable": 1, "provider": {"name": f"{ns}-{pool}", "parameterValues": {}}})
    pool_made = {h["metadata"]["name"] for pool in pools for h in ready_pool_handles(user, f"{ns}-{pool}", 1)}
    slow, broken, plain = (status(bind(user, ns, pool, f"{ns}-{pool}"))["resourceHandle"]["name"] for pool in pools)
    assert {slow, broken, plain} <= pool_made  # reuse is for handles a pool made
    stuck = machine(user, user.get_handle(slow) or {})
    assert stuck is not None
    label_stuck(user, stuck, True)
    for pool in pools:
        user.delete_claim(ns, pool)

    # the janitor never finishes: the handle cleans for its 5 s, then it and its Machine are deleted
    wait_handle(user, slow, lambda h: status(h).get("state") == "Cleaning", "Cleaning", timeout=5)

    # without reuse the handle goes with its claim, and nothing about cleaning shows
    wait_for(lambda: user.get_handle(plain) is None, timeout=15, interval=0.1, message=f"handle {plain} deleted")
    plain_pool = user.get_pool(f"{ns}-plain")
    assert "cleaning" not in status(plain_pool).get("resourceHandleCount", {})
    assert all("state" not in status(h) for h in user.pool_handles(f"{ns}-plain", unbound_only=False))

    # a cleanup patch that does not render: the reason on the handle, which is deleted as without reuse
    wait_for(lambda: user.get_handle(broken) is None, timeout=15, interval=0.1, message=f"handle {broken} deleted")
    event = wait_event(user, broken, "InvalidReuse")
    assert event.type == "Warning" and "'no_such' is undefined" in event.message

    wait_for(lambda: user.get_handle(slow) is None, timeout=20, interval=0.2, message=f"handle {slow} deleted")
    event = wait_event(user, slow, "CleaningFailed")
    assert event.type == "Warning" and "cleanupTimeout 5s" in event.message
    wait_for(lambda: machine(user, {"status": {"resources": [{"reference": {
        "namespace": ns, "name": stuck["metadata"]["name"]}}]}}) is None, timeout=10, message="its Machine deleted")
    pool = wait_for(lambda: (p := user.get_pool(f"{ns}-slow")) and status(p)["resourceHandleCount"].get("cleaning")
                    == 0 and status(p)["resourceHandleCount"]["available"] == 1 and p, timeout=15,
                    message="the pool counts none cleaning and one available")
    assert slow not in {h["metadata"]["name"] for h in user.pool_handles(f"{ns}-slow", unbound_only=False)}


def test_an_auto_detached_claim_releases_its_reusable_handle_to_its_pool(machines: User) -> None:
    user = machines
    ns = user.namespace("reuse-detach")
    user.provider(f"{ns}-vm", machine_provider(ns, REUSE))
    user.pool(f"{ns}-labs", {"minAvailable": 1, "provider": {"name": f"{ns}-vm", "parameterValues": {}}})
    name = ready_pool_handles(user, f"{ns}-labs", 1)[0]["metadata"]["name"]
    assert status(bind(user, ns, "done", f"{ns}-vm"))["resourceHandle"]["name"] == name
    used = wait_for(lambda: (m := machine(user, user.get_handle(name) or {})) and m["spec"]["owner"] == "done" and m,
                    timeout=10, message="the Machine serves the claim")

    # the claim's autoDetach condition comes true: it is detached and kept, its handle released rather than deleted
    user.patch_claim(ns, "done", {"spec": {"autoDetach": {"when": "true"}}})
    detached = user.wait_claim(ns, "done", lambda c: status(c)["resourceHandle"].get("detached") is True,
                               message="the claim is detached")
    assert condition(detached, "Bound").get("reason") == "Detached"
    event = wait_for(lambda: next((e for e in user.events(ns, "done") if e.reason == "Detached"), None), timeout=10,
                     interval=0.2, message="Event Detached on the claim")
    assert event.message == f"autoDetach condition is true; releasing ResourceHandle {name}"
    wait_event(user, name, "Reused")
    fresh = wait_handle(user, name, lambda h: status(h).get("state") == "Running" and "resourceClaim" not in h["spec"],
                        "back in its pool, unbound")
    returned = wait_for(lambda: (m := machine(user, fresh)) and m["spec"]["owner"] == "pool" and m, timeout=10,
                        message="the Machine's claim-specific value is restored")
    assert returned["metadata"]["uid"] == used["metadata"]["uid"]

    # the detached claim goes later and leaves the handle, which its pool holds again, alone
    user.delete_claim(ns, "done")
    wait_for(lambda: user.get_claim(ns, "done") is None, timeout=15, message="the detached claim is gone")
    kept = user.get_handle(name)
    assert kept is not None and "deletionTimestamp" not in kept["metadata"] and "resourceClaim" not in kept["spec"]

"""Real ``kubectl wait --for=condition=Ready`` returns as soon as the object is Ready, whoever changed its spec.

kubectl waits until a condition's ``observedGeneration`` equals ``metadata.generation``. The operator writes a
claim's own spec (``spec.lifespan.end`` on first ready) and a handle's (binding, propagation); the conditions
written afterwards must carry the generation of that spec, or ``kubectl wait`` hangs until some periodic sweep
runs the object again. This stack keeps the sweeps at their production intervals (60 s claims and handles,
permanent errors re-checked after 300 s) so a stale ``observedGeneration`` shows as a ``kubectl wait`` timeout
(15 s, kubectl's own bound) instead of being repaired behind the test's back.

Also docs/users.md "ResourceClaim conditions and Events": a requested end beyond the provider's maximum is clamped and
explained by ``Synced`` (reason ``LifespanClamped``) and one Warning Event per change.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.provider_support import NS, D, User, condition, config_map_provider, kubectl, parse, timestamp
from tests.waiting import wait_for

pytestmark = [pytest.mark.kubectl]

#: production sweep intervals: nothing but the watch and the reconcilers themselves may make a wait return
PRODUCTION_INTERVALS = {
    "POOLBOY_MANAGE_CLAIMS_INTERVAL": "60",
    "POOLBOY_MANAGE_HANDLES_INTERVAL": "60",
    "POOLBOY_MANAGE_POOLS_INTERVAL": "60",
    "POOLBOY_RESYNC_INTERVAL": "600",
    "POOLBOY_PERMANENT_ERROR_RECHECK": "300",
}
WAIT = "--timeout=15s"
PROVIDER = "p-wait"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    options = e2e_options(workers=1, concurrency=2, env=dict(PRODUCTION_INTERVALS))
    with LocalStack(options) as running:
        yield running


@pytest.fixture(scope="module")
def user(stack: LocalStack) -> User:
    return User(stack)


@pytest.fixture(scope="module")
def ns(user: User) -> str:
    """One user namespace and one provider: a 1d default (first ready rewrites the claim's spec), a 3d
    relativeMaximum (a request beyond it is clamped) and a greeting of at most 12 characters."""
    namespace = user.namespace("wait")
    user.provider(PROVIDER, config_map_provider(
        namespace, lifespan={"default": "1d", "maximum": "7d", "relativeMaximum": "3d"},
        parameters=[{"name": "greeting", "allowUpdate": True, "default": {"value": "hello"},
                     "validation": {"openAPIV3Schema": {"type": "string", "maxLength": 12}}}]))
    return namespace


def claim_spec(greeting: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"provider": {"name": PROVIDER, "parameterValues": {"greeting": greeting}}, **extra}


def kubectl_wait(stack: LocalStack, namespace: str, resource: str, condition_: str = "Ready") -> None:
    """``kubectl wait`` with kubectl's own 15 s bound: a stale observedGeneration makes it time out."""
    waited = kubectl(stack, "wait", f"--for=condition={condition_}", WAIT, "-n", namespace, resource)
    assert waited.returncode == 0, f"kubectl wait {resource}: {waited.stderr}\n{stack.logs()}"


def assert_observed(obj: dict[str, Any] | None, types: tuple[str, ...]) -> None:
    """Every listed condition describes the object's current spec."""
    assert obj is not None
    generation = obj["metadata"]["generation"]
    for type_ in types:
        assert condition(obj, type_).get("observedGeneration") == generation, (type_, obj["status"]["conditions"])


CLAIM_CONDITIONS = ("Synced", "Bound", "Ready", "Healthy")


def wait_claim_ready(stack: LocalStack, user: User, namespace: str, name: str) -> dict[str, Any]:
    kubectl_wait(stack, namespace, f"rclaim/{name}")
    claim = user.get_claim(namespace, name)
    assert_observed(claim, CLAIM_CONDITIONS)
    return claim or {}


def warnings(user: User, namespace: str, name: str, reason: str) -> int:
    return sum(e.count or 1 for e in user.events(namespace, name) if e.reason == reason and e.type == "Warning")


def test_kubectl_wait_returns_for_new_claims(stack: LocalStack, user: User, ns: str) -> None:
    names = [f"new-{i}" for i in range(6)]
    for name in names:
        user.claim(ns, name, claim_spec())
    for name in names:
        claim = wait_claim_ready(stack, user, ns, name)
        # first ready rewrote the claim's own spec (end = firstReady + 1d): a generation the user did not make
        assert claim["metadata"]["generation"] >= 2
        assert claim["spec"]["lifespan"]["end"] == claim["status"]["lifespan"]["end"]


def test_kubectl_wait_returns_after_a_parameter_patch(stack: LocalStack, user: User, ns: str) -> None:
    names = ["param-0", "param-1"]
    for name in names:
        user.claim(ns, name, claim_spec())
    for name in names:
        wait_claim_ready(stack, user, ns, name)
    for name in names:
        user.patch_claim(ns, name, {"spec": {"provider": {"parameterValues": {"greeting": "howdy"}}}})
        claim = wait_claim_ready(stack, user, ns, name)
        # the claim's run propagated the value into the handle's spec: the handle's conditions follow it too
        handle_name = claim["status"]["resourceHandle"]["name"]
        kubectl_wait(stack, NS, f"resourcehandle/{handle_name}")
        handle = user.get_handle(handle_name) or {}
        assert handle["spec"]["provider"]["parameterValues"]["greeting"] == "howdy"
        assert_observed(handle, ("Synced", "Ready", "Healthy"))


def test_kubectl_wait_returns_after_a_lifespan_change(stack: LocalStack, user: User, ns: str) -> None:
    user.claim(ns, "life", claim_spec())
    wait_claim_ready(stack, user, ns, "life")
    wanted = timestamp(timedelta(days=2))
    user.patch_claim(ns, "life", {"spec": {"lifespan": {"end": wanted}}})
    claim = wait_claim_ready(stack, user, ns, "life")
    assert claim["spec"]["lifespan"]["end"] == wanted
    # the wait proves the run for this generation is done, and that run wrote the handle first
    assert (user.get_handle(claim["status"]["resourceHandle"]["name"]) or {})["spec"]["lifespan"]["end"] == wanted


def test_kubectl_wait_returns_after_an_error_is_fixed(stack: LocalStack, user: User, ns: str) -> None:
    names = ["fixed-0", "fixed-1", "fixed-2"]
    for name in names:
        user.claim(ns, name, claim_spec(greeting="far-too-long-a-greeting"))
    for name in names:
        kubectl_wait(stack, ns, f"rclaim/{name}", "Synced=False")
        claim = user.get_claim(ns, name) or {}
        assert condition(claim, "Synced")["reason"] == "ValidationFailed"
        assert_observed(claim, ("Synced",))
    for name in names:
        user.patch_claim(ns, name, {"spec": {"provider": {"parameterValues": {"greeting": "fine"}}}})
    for name in names:
        claim = wait_claim_ready(stack, user, ns, name)
        assert condition(claim, "Synced")["reason"] == "Synced"


def test_a_clamped_lifespan_request_is_explained_once_per_change(stack: LocalStack, user: User, ns: str) -> None:
    requested = timestamp(timedelta(days=30))
    user.claim(ns, "clamped", claim_spec(lifespan={"end": requested}))
    claim = wait_claim_ready(stack, user, ns, "clamped")
    end = claim["status"]["lifespan"]["end"]
    assert parse(end) < parse(requested)
    synced = condition(claim, "Synced")
    assert (synced["status"], synced["reason"]) == ("True", "LifespanClamped")
    for part in (requested, end, "relativeMaximum 3d"):
        assert part in synced["message"], synced["message"]
    wait_for(lambda: warnings(user, ns, "clamped", "LifespanClamped") == 1, timeout=10, message="one Warning")
    event = next(e for e in user.events(ns, "clamped") if e.reason == "LifespanClamped")
    assert event.message == synced["message"]

    # a re-run with the same request (a parameter patch) explains nothing again
    user.patch_claim(ns, "clamped", {"spec": {"provider": {"parameterValues": {"greeting": "again"}}}})
    assert condition(wait_claim_ready(stack, user, ns, "clamped"), "Synced")["message"] == synced["message"]
    assert warnings(user, ns, "clamped", "LifespanClamped") == 1

    # a new request beyond the maximum is a change: one more Warning
    user.patch_claim(ns, "clamped", {"spec": {"lifespan": {"end": timestamp(timedelta(days=40))}}})
    claim = wait_claim_ready(stack, user, ns, "clamped")
    assert condition(claim, "Synced")["reason"] == "LifespanClamped"
    wait_for(lambda: warnings(user, ns, "clamped", "LifespanClamped") == 2, timeout=10, message="second Warning")

    # a request within the limits is applied exactly and the explanation goes away
    within = timestamp(timedelta(days=1))
    user.patch_claim(ns, "clamped", {"spec": {"lifespan": {"end": within}}})
    claim = wait_claim_ready(stack, user, ns, "clamped")
    assert claim["status"]["lifespan"]["end"] == within
    assert (condition(claim, "Synced")["reason"], condition(claim, "Synced")["message"]) == ("Synced", "")


def test_handle_and_pool_conditions_follow_their_generation(stack: LocalStack, user: User, ns: str) -> None:
    user.pool("pool-wait", {"minAvailable": 2, "provider": {"name": PROVIDER, "parameterValues": {}}})
    kubectl_wait(stack, NS, "resourcepool/pool-wait")
    wait_for(lambda: len(user.pool_handles("pool-wait")) == 2, timeout=15, message="two pool handles")
    for handle in user.pool_handles("pool-wait"):
        kubectl_wait(stack, NS, f"resourcehandle/{handle['metadata']['name']}")

    # binding writes the pool handle's spec (resourceClaim, provider, lifespan): a new generation of the handle
    user.claim(ns, "pooled", claim_spec(), metadata={"annotations": {f"{D}/resource-pool-name": "pool-wait"}})
    claim = wait_claim_ready(stack, user, ns, "pooled")
    name = claim["status"]["resourceHandle"]["name"]
    kubectl_wait(stack, NS, f"resourcehandle/{name}")
    handle = user.get_handle(name) or {}
    assert handle["spec"]["resourceClaim"]["name"] == "pooled"
    assert_observed(handle, ("Synced", "Ready", "Healthy"))

    # the pool replaces the bound handle; a user's spec change is observed too
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", "pool-wait", {"spec": {"minAvailable": 3}})
    kubectl_wait(stack, NS, "resourcepool/pool-wait")
    assert_observed(user.get_pool("pool-wait"), ("Ready",))

"""Events a user can see (``kubectl describe``) on claims and handles, one per transition, with stable reasons.

The issue asks for Events "for every transition a user cares about (bound, created, validation failed, lifespan
changed, expired, deleted)". Each test drives the domain reconcilers to quiescence, re-runs them as the periodic
sweep would, and reads the Events with the official ``kubernetes`` client, as a user's tooling would: every reason
appears once, on the transition, never again on a converged re-run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client, config

from poolboy.kube import event_recorder
from tests.integration.claim_support import ClaimEnv, env_fixture, ts  # noqa: F401 - env_fixture provides "env"


@pytest.fixture()
def core(devcluster) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(str(devcluster.kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


def sent_events(core: client.CoreV1Api, namespace: str) -> list[Any]:
    """The Events in ``namespace`` once every Event emitted so far is sent (reconcilers emit without waiting)."""
    assert event_recorder.flush(10), "queued Events not sent within 10 s"
    return core.list_namespaced_event(namespace).items


def reasons(core: client.CoreV1Api, namespace: str, kind: str, name: str) -> Counter[str]:
    """How many times each reason was reported about ``kind/name`` (read through the official client). Repeats
    are aggregated into one Event's ``count``, so occurrences are counted, not Event objects."""
    found: Counter[str] = Counter()
    for e in sent_events(core, namespace):
        if e.involved_object.kind == kind and e.involved_object.name == name:
            found[e.reason] += e.count or 1
    return found


def events_of(core: client.CoreV1Api, namespace: str, kind: str, name: str, reason: str) -> list[Any]:
    return [e for e in sent_events(core, namespace)
            if e.involved_object.kind == kind and e.involved_object.name == name and e.reason == reason]


def _claim(env: ClaimEnv, name: str = "c", **spec: Any) -> None:
    env.claim(name, {"resources": [{"name": "r", "provider": {"name": "p"}, "template": {"data": {"a": "1"}}}],
                     **spec})


def test_created_claim_and_its_handle_get_one_event_per_transition(env: ClaimEnv,
                                                                   core: client.CoreV1Api) -> None:
    env.configmap_provider("p", lifespan={"default": "1h", "maximum": "1d"})
    _claim(env)
    env.converge("c")
    handle = env.claim_handle("c")["metadata"]["name"]
    configmap = env.claim_handle("c")["status"]["resources"][0]["reference"]["name"]

    claim_events = reasons(core, env.ns, "ResourceClaim", "c")
    handle_events = reasons(core, env.op, "ResourceHandle", handle)
    assert claim_events["HandleCreated"] == 1
    # a handle created for its claim is born bound: its Events start with the resource it creates
    assert handle_events == {"ResourceCreated": 1}
    created = events_of(core, env.op, "ResourceHandle", handle, "ResourceCreated")[0]
    assert created.type == "Normal" and created.message == f"Created ConfigMap {env.ns}/{configmap}"

    # periodic re-runs of a converged claim and handle emit nothing new
    env.converge("c")
    env.converge("c")
    assert reasons(core, env.ns, "ResourceClaim", "c") == claim_events
    assert reasons(core, env.op, "ResourceHandle", handle) == handle_events

    # a lifespan change: one LifespanChange Event, not repeated by later runs
    end = ts(env.converger.clock() + timedelta(hours=3))
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"spec": {"lifespan": {"end": end}}})
    env.converge("c")
    env.converge("c")
    changed = events_of(core, env.ns, "ResourceClaim", "c", "Lifespan end changed")
    assert [e.count for e in changed] == [1] and changed[0].action == "LifespanChange" and end in changed[0].message

    # deletion: the claim says so once, the handle reports the resource it deleted
    env.kube.delete(env.api, "ResourceClaim", "c", env.ns)
    env.converge("c")
    assert env.get_claim("c") is None and env.get_handle(handle) is None
    assert reasons(core, env.ns, "ResourceClaim", "c")["Deleted"] == 1
    deleted = events_of(core, env.op, "ResourceHandle", handle, "ResourceDeleted")
    assert [(e.message, e.count) for e in deleted] == [(f"Deleted ConfigMap {env.ns}/{configmap}", 1)]


def test_binding_a_pool_handle_is_an_event_on_both_sides(env: ClaimEnv, core: client.CoreV1Api) -> None:
    env.configmap_provider("p")
    env.handle("guid-pool1", {"resources": [{"provider": env.provider_ref("p"), "template": {}}]},
               labels={f"{env.d}/resource-pool-name": "pool1", f"{env.d}/resource-pool-namespace": env.op})
    _claim(env)
    env.converge("c")
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] == "guid-pool1"
    assert reasons(core, env.ns, "ResourceClaim", "c")["Bound"] == 1
    bound = events_of(core, env.op, "ResourceHandle", "guid-pool1", "Bound")
    assert [(e.message, e.count) for e in bound] == [(f"Bound to ResourceClaim {env.ns}/c", 1)]


def test_validation_failure_is_one_warning_until_it_changes(env: ClaimEnv, core: client.CoreV1Api) -> None:
    env.configmap_provider("p", validation={"checks": [{"name": "a-is-2", "check": "data.a == '2'"}]})
    _claim(env)
    env.converge("c")
    env.converge("c")
    warnings = events_of(core, env.ns, "ResourceClaim", "c", "ValidationFailed")
    assert [e.count for e in warnings] == [1] and warnings[0].type == "Warning"
    assert "Validation check failed: a-is-2" in warnings[0].message


def test_expired_handle_tells_the_claim_before_deleting_it(env: ClaimEnv, core: client.CoreV1Api) -> None:
    env.configmap_provider("p", lifespan={"default": "1h"})
    _claim(env)
    env.converge("c")
    handle = env.claim_handle("c")["metadata"]["name"]
    later = env.converger.clock() + timedelta(hours=2)
    env.converge_key(env.key_of("handle", handle), now=later)
    assert env.get_claim("c") is None and env.get_handle(handle) is None
    claim_events = reasons(core, env.ns, "ResourceClaim", "c")
    assert claim_events["Expired"] == 1 and claim_events["Deleted"] == 1
    assert reasons(core, env.op, "ResourceHandle", handle)["Expired"] == 1

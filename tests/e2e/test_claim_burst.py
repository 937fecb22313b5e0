"""Concurrency on the real stack: 200 claims at once against a pool of 100, with a worker SIGKILLed mid-burst while
it runs reconciles (the runs it cut short are seen holding their work queue leases after the kill).

Outcomes that must hold however the work is spread over worker processes (docs/behaviour.md#binding, #pools,
#design-rules rule 3):
no handle bound twice, no claim with two handles, every claim bound (100 from the pool, the rest on new
handles), and the pool refilled to minAvailable.
"""

from __future__ import annotations

import ast
import signal
import socket
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from kubernetes import client, config

from poolboy.settings import Settings
from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for
from workers.broker import probe_app
from workqueue import keyspace

D = "poolboy.gpte.redhat.com"
NS = "poolboy"
USER_NS = "burst"
POOL_SIZE = 100
CLAIMS = 200


@pytest.fixture(scope="module")
def burst_stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=2, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        yield running


def custom_api(stack: LocalStack) -> client.CustomObjectsApi:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
    return client.CustomObjectsApi(client.ApiClient(configuration))


def create(api: client.CustomObjectsApi, namespace: str, plural: str, body: dict) -> None:
    api.create_namespaced_custom_object(D, "v1", namespace, plural, body)


def setup_provider_and_pool(stack: LocalStack, api: client.CustomObjectsApi) -> None:
    core = client.CoreV1Api(api.api_client)
    core.create_namespace({"metadata": {"name": USER_NS}})
    create(api, NS, "resourceproviders", {
        "apiVersion": f"{D}/v1", "kind": "ResourceProvider", "metadata": {"name": "burst", "namespace": NS},
        "spec": {
            "template": {"enable": True, "definition": {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": USER_NS},
                "data": {"value": "{{ value }}"}}},
            "parameters": [{"name": "value", "default": {"value": "x"}}],
            "override": {"metadata": {"name": "burst-{{ guid }}"}},
            "healthCheck": "true", "readinessCheck": "true",
        },
    })
    create(api, NS, "resourcepools", {
        "apiVersion": f"{D}/v1", "kind": "ResourcePool", "metadata": {"name": "burst", "namespace": NS},
        "spec": {"minAvailable": POOL_SIZE, "provider": {"name": "burst", "parameterValues": {"value": "x"}}},
    })


def runs_in_progress(probe: Any, client: redis.Redis, index: int) -> dict[str, str]:
    """The reconciles worker ``index`` is executing, as key -> the work queue lease token of that run: a task the worker
    reports active whose key's lease (:func:`workqueue.keyspace.active`) is held by a token of that task's id."""
    hostname = f"worker{index}@{socket.gethostname()}"
    active = (probe.control.inspect(destination=[hostname], timeout=1).active() or {}).get(hostname) or []
    held = {}
    for task in active:
        args = ast.literal_eval(task["args"]) if isinstance(task["args"], str) else task["args"]
        token = client.get(keyspace.active(args[0])) if args else None
        if token and token.startswith(f"{task['id']}/"):
            held[args[0]] = token
    return held


def kill_mid_run(stack: LocalStack, index: int, timeout: float = 60) -> list[str]:
    """SIGKILL worker ``index`` while it runs reconciles, and return the keys whose runs the kill cut short: their
    leases still hold those runs' tokens after the kill, so no DONE released them (a run that ended first is not
    counted); fails when the worker is never caught mid-run."""
    probe = probe_app(Settings.from_env(stack.env))
    client = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            held = runs_in_progress(probe, client, index)
            if held:
                stack.child(f"worker-{index}").signal(signal.SIGKILL)
                cut = [key for key, token in held.items() if client.get(keyspace.active(key)) == token]
                if cut:
                    assert all(client.zscore(keyspace.LEASES, key) is not None for key in cut), cut
                    return cut
                raise AssertionError(f"worker-{index} finished {sorted(held)} before the kill reached it")
        raise AssertionError(f"worker-{index} was never seen running a reconcile within {timeout}s")
    finally:
        client.close()
        probe.close()


def handles(api: client.CustomObjectsApi) -> list[dict]:
    return api.list_namespaced_custom_object(D, "v1", NS, "resourcehandles")["items"]


def claims(api: client.CustomObjectsApi) -> list[dict]:
    return api.list_namespaced_custom_object(D, "v1", USER_NS, "resourceclaims")["items"]


@pytest.mark.slow
def test_200_claims_against_a_pool_of_100_with_a_worker_killed(burst_stack: LocalStack) -> None:
    api = custom_api(burst_stack)
    setup_provider_and_pool(burst_stack, api)
    wait_for(lambda: len([h for h in handles(api) if "resourceClaim" not in h["spec"]]) >= POOL_SIZE,
             timeout=180, message=f"{POOL_SIZE} pool handles")
    pool_handles = {h["metadata"]["name"] for h in handles(api)}

    for index in range(CLAIMS):
        create(api, USER_NS, "resourceclaims", {
            "apiVersion": f"{D}/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"c{index:03d}", "namespace": USER_NS},
            "spec": {"provider": {"name": "burst", "parameterValues": {"value": "x"}}},
        })
        if index == CLAIMS // 4:
            kill_mid_run(burst_stack, 1)

    def all_bound() -> bool:
        return all(c.get("status", {}).get("resourceHandle") for c in claims(api)) and len(claims(api)) == CLAIMS

    wait_for(all_bound, timeout=300, interval=0.5, message="every claim bound")

    claim_list = claims(api)
    bound_names = [c["status"]["resourceHandle"]["name"] for c in claim_list]
    assert len(set(bound_names)) == CLAIMS, "a handle is bound to two claims"
    handle_list = handles(api)
    claimed_by = Counter((h["spec"]["resourceClaim"]["namespace"], h["spec"]["resourceClaim"]["name"])
                         for h in handle_list if h["spec"].get("resourceClaim"))
    assert max(claimed_by.values()) == 1, "a claim got two handles"
    assert sum(1 for name in bound_names if name in pool_handles) == POOL_SIZE
    for claim, name in zip(claim_list, bound_names, strict=True):
        handle = next(h for h in handle_list if h["metadata"]["name"] == name)
        assert handle["spec"]["resourceClaim"]["name"] == claim["metadata"]["name"]

    def pool_refilled() -> bool:
        unbound = [h for h in handles(api) if not h["spec"].get("resourceClaim")
                   and h["metadata"].get("labels", {}).get(f"{D}/resource-pool-name") == "burst"]
        return len(unbound) >= POOL_SIZE

    wait_for(pool_refilled, timeout=300, interval=1.0, message="pool refilled to minAvailable")

"""Redis is an accelerator, not the truth: FLUSHALL mid-run loses work queue, queue and events, and the periodic resync
(listing from a real devcluster through ``poolboy.kube``) brings every object back to convergence; with Redis
intact it runs only what changed.
"""

from __future__ import annotations

import uuid

import pytest
import redis

from cache.store import ObjectCache
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from stack.testing import BeatProcess, WorkerProcess
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, RECONCILERS
from tests.waiting import wait_for

pytestmark = pytest.mark.slow
GROUP = "/apis/poolboy.gpte.redhat.com/v1"


def _claim(name: str, value: str) -> dict:
    return {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "annotations": {"test/value": value}},
            "spec": {"provider": {"name": "test", "parameterValues": {"p": 1}}}}


def _set_value(kube: KubeClient, namespace: str, name: str, value: str) -> None:
    kube.patch_merge("poolboy.gpte.redhat.com/v1", "ResourceClaim", name, namespace,
                     {"metadata": {"annotations": {"test/value": value}}})


def test_flushall_mid_run_then_resync_converges(devcluster, redis_server, r, enqueuer):
    namespace = f"observe-{uuid.uuid4().hex[:6]}"
    devcluster.request("POST", "/api/v1/namespaces",
                       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    names = [f"c{i}" for i in range(6)]
    for name in names:
        devcluster.request("POST", f"{GROUP}/namespaces/{namespace}/resourceclaims", _claim(name, "v1"))
    keys = [f"claim/{namespace}/{name}" for name in names]
    kube = KubeClient.from_settings(Settings.from_env(), kubeconfig=str(devcluster.kubeconfig))
    env = {**ENV, "ENGINE_TEST_OBSERVE_PREFIX": "observe-", "POOLBOY_RESYNC_INTERVAL": "3"}

    def converged(value: str) -> bool:
        return all(r.get(f"observed:{key}") == value for key in keys)

    with WorkerProcess(redis_server.url, ["claims", "periodic"], 2, reconcilers=RECONCILERS, env=env,
                       kubeconfig=devcluster.kubeconfig), \
            BeatProcess(redis_server.url, env=env, kubeconfig=devcluster.kubeconfig):
        enqueuer.add_many(keys)
        wait_for(lambda: converged("v1"), 20, message="first convergence")
        for key in keys:
            r.hset(f"behave:{key}", "sleep", "0.3")
        for name in names:
            _set_value(kube, namespace, name, "v2")
        enqueuer.add_many(keys)
        wait_for(lambda: any(len(er.runs(r, key)) % 2 for key in keys), 10, message="a run in progress")
        r.flushall()  # work queue marks, queued messages, run logs: all gone mid-run
        for name in names:
            _set_value(kube, namespace, name, "v3")  # events nobody will deliver (no watcher here)
        wait_for(lambda: converged("v3"), 30, message="convergence after FLUSHALL via resync")
    kube.close()


def test_resync_runs_only_the_claims_the_api_changed_behind_the_cache(devcluster, redis_server, r, enqueuer):
    """The resync compares the versions the API lists with the ones the last successful runs saw: a claim changed
    while no watcher delivered its event runs again, the unchanged ones are passed over."""
    namespace = f"resync-{uuid.uuid4().hex[:6]}"
    devcluster.request("POST", "/api/v1/namespaces",
                       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    names = ["changed", "same-1", "same-2"]
    cache = ObjectCache(redis.Redis.from_url(redis_server.url), Settings().domain)
    for name in names:  # as a watcher would have cached them
        cache.put(devcluster.request("POST", f"{GROUP}/namespaces/{namespace}/resourceclaims", _claim(name, "v1")))
    keys = {name: f"claim/{namespace}/{name}" for name in names}
    kube = KubeClient.from_settings(Settings.from_env(), kubeconfig=str(devcluster.kubeconfig))
    env = {**ENV, "ENGINE_TEST_OBSERVE_PREFIX": "resync-", "POOLBOY_RESYNC_INTERVAL": "2"}

    with WorkerProcess(redis_server.url, ["claims", "periodic"], 2, reconcilers=RECONCILERS, env=env,
                       kubeconfig=devcluster.kubeconfig), \
            BeatProcess(redis_server.url, env=env, kubeconfig=devcluster.kubeconfig):
        enqueuer.add_many(list(keys.values()))
        wait_for(lambda: all(r.get(f"observed:{key}") == "v1" for key in keys.values()) and er.idle(r), 20,
                 message="first convergence")
        before = {name: er.completed(r, key) for name, key in keys.items()}
        _set_value(kube, namespace, "changed", "v2")  # no watcher: the cache keeps the old version
        wait_for(lambda: r.get(f"observed:{keys['changed']}") == "v2", 20, message="the resync runs the changed claim")
        wait_for(lambda: er.idle(r), 20, message="the runs that resync added are over")
    assert er.completed(r, keys["changed"]) > before["changed"]
    assert {name: er.completed(r, keys[name]) for name in ("same-1", "same-2")} == \
        {name: before[name] for name in ("same-1", "same-2")}, "unchanged claims are passed over"
    kube.close()

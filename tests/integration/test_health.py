"""``/healthz`` and ``/readyz`` of real watcher, worker and beat processes (workers/health.py, watcher/health.py).

Each loop is stopped for real and the endpoint must fail, then recover: Redis killed and restarted on the same port
(the worker consumer loses its broker connection, the watcher retries the delivery of an event), the API server
frozen with SIGSTOP (readiness), and each process frozen as a whole (a probe gets no answer at all).
"""

from __future__ import annotations

import os
import signal
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from devcluster.testing import DEFAULT_CRDS, DevCluster
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from stack.testing import BeatProcess, RedisServer, WorkerProcess, _ServiceProcess, free_port
from tests.waiting import wait_for

pytestmark = pytest.mark.slow

STALL = 2  # POOLBOY_HEALTH_STALL_SECONDS in these tests


def probe(port: int, path: str, timeout: float = 6) -> int:
    """The HTTP status of one probe, 0 when nothing answers within the chart's probe timeout (6 s; /readyz may
    wait for a Redis PING and an API request of a few seconds each)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


class WatcherProcess(_ServiceProcess):
    """``poolboy watcher`` with leader election (a short lease), as the chart runs it."""

    command = "watcher"

    def __init__(self, redis_url: str, kubeconfig: str, env: dict[str, str]) -> None:
        super().__init__(redis_url, ["--kubeconfig", kubeconfig, "--watch-timeout", "30"], env)

    def __enter__(self) -> WatcherProcess:
        self.launch()
        return self


@dataclass
class Component:
    name: str
    process: _ServiceProcess
    port: int

    def status(self, path: str, timeout: float = 6) -> int:
        return probe(self.port, path, timeout)

    def wait(self, path: str, expected: int, timeout: float = 30, probe_timeout: float = 6) -> None:
        wait_for(lambda: self.status(path, probe_timeout) == expected, timeout=timeout, interval=0.2,
                 message=f"{self.name} {path} == {expected}; log:\n{self.process.log()[-3000:]}")


@dataclass
class Stack:
    cluster: DevCluster
    redis: RedisServer
    kube: KubeClient
    components: dict[str, Component]

    def __getitem__(self, name: str) -> Component:
        return self.components[name]

    def wait_all(self, path: str, expected: int, timeout: float = 30) -> None:
        for component in self.components.values():
            component.wait(path, expected, timeout)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """One stack for the module (each test leaves it recovered): its own devcluster, since one test freezes it."""
    with DevCluster(crds=[DEFAULT_CRDS]) as cluster:
        yield from _stack(cluster)


def _stack(fresh_devcluster: DevCluster) -> Iterator[Stack]:
    namespace = f"op-{uuid.uuid4().hex[:6]}"
    kube = KubeClient.from_settings(Settings.from_env(operator_namespace=namespace),
                                    kubeconfig=str(fresh_devcluster.kubeconfig))
    for name in (namespace, "users"):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    redis = RedisServer().start()
    ports = {name: free_port() for name in ("watcher", "worker", "beat")}

    def env(name: str) -> dict[str, str]:
        return {"POOLBOY_NAMESPACE": namespace, "POOLBOY_HEALTH_PORT": str(ports[name]),
                "POOLBOY_HEALTH_ADDRESS": "127.0.0.1", "POOLBOY_HEALTH_STALL_SECONDS": str(STALL),
                "POOLBOY_WATCHER_LEASE_SECONDS": "3", "POOLBOY_API_TIMEOUT": "3", "POOLBOY_METRICS_PORT": "0"}

    kubeconfig = str(fresh_devcluster.kubeconfig)
    processes: dict[str, _ServiceProcess] = {
        "watcher": WatcherProcess(redis.url, kubeconfig, env("watcher")),
        "worker": WorkerProcess(redis.url, ("claims",), 1, env=env("worker"), kubeconfig=kubeconfig),
        "beat": BeatProcess(redis.url, env=env("beat"), kubeconfig=kubeconfig),
    }
    started: list[_ServiceProcess] = []
    try:
        for process in processes.values():
            process.__enter__()  # type: ignore[attr-defined]
            started.append(process)
        yield Stack(fresh_devcluster, redis, kube,
                    {name: Component(name, process, ports[name]) for name, process in processes.items()})
    finally:
        for process in reversed(started):
            process.kill(signal.SIGCONT)  # a frozen process cannot stop
            process.__exit__()
        redis.stop()
        kube.close()


def test_every_component_is_live_and_ready(stack: Stack) -> None:
    stack.wait_all("/readyz", 200)
    stack.wait_all("/healthz", 200)
    assert probe(stack["worker"].port, "/nothing") == 404


def test_redis_outage_fails_the_probes_and_they_recover(stack: Stack) -> None:
    stack.wait_all("/readyz", 200)
    port = stack.redis.port
    stack.redis.stop()
    stack.wait_all("/readyz", 503)
    stack["worker"].wait("/healthz", 503)  # the consumer lost its broker connection and cannot get one back
    # an event the watcher cannot hand to the work queue: its delivery thread stays stuck retrying it
    stack.kube.create({"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
                       "metadata": {"name": "c1", "namespace": "users"}, "spec": {"provider": {"name": "p"}}})
    stack["watcher"].wait("/healthz", 503)

    stack.redis = RedisServer(port=port).start()
    stack.wait_all("/healthz", 200, timeout=60)
    stack.wait_all("/readyz", 200, timeout=60)


def test_api_unreachable_fails_readiness_and_it_recovers(stack: Stack) -> None:
    stack.wait_all("/readyz", 200)
    assert stack.cluster.process is not None
    os.kill(stack.cluster.process.pid, signal.SIGSTOP)
    try:
        stack["worker"].wait("/readyz", 503)
        stack["watcher"].wait("/readyz", 503)
        assert stack["worker"].status("/healthz") == 200  # liveness never depends on the API
        assert stack["beat"].status("/readyz") == 200  # beat makes no API call
    finally:
        os.kill(stack.cluster.process.pid, signal.SIGCONT)
    stack.wait_all("/readyz", 200, timeout=60)
    stack.wait_all("/healthz", 200, timeout=60)


@pytest.mark.parametrize("name", ["watcher", "worker", "beat"])
def test_a_frozen_process_answers_no_probe_until_it_runs_again(stack: Stack, name: str) -> None:
    component = stack[name]
    component.wait("/healthz", 200)
    component.process.kill(signal.SIGSTOP)
    try:
        component.wait("/healthz", 0, probe_timeout=1)
    finally:
        component.process.kill(signal.SIGCONT)
    component.wait("/healthz", 200)

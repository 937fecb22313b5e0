"""Several client processes writing and watching at once, as the watcher, workers and kubectl do in practice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kubernetes import client

from devcluster.testing import DevCluster
from tests.devcluster.kube import MERGE, unique

ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.devcluster.clients", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str], timeout: float = 90) -> str:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"client process timed out; stderr: {err[-2000:]}") from None
    assert process.returncode == 0, err[-2000:]
    return out


def test_concurrent_writers_and_watchers_see_every_event_once_in_order(devcluster: DevCluster,
                                                                        core: client.CoreV1Api,
                                                                        namespace: str) -> None:
    writers, per_writer = 3, 12
    expected_events = writers * per_writer * 2
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    kubeconfig = str(devcluster.kubeconfig)
    watchers = [spawn("watcher", kubeconfig, namespace, start, str(expected_events)) for _ in range(3)]
    writer_processes = [spawn("writer", kubeconfig, namespace, f"p{w}", str(per_writer)) for w in range(writers)]
    for process in writer_processes:
        finish(process)
    streams = [[json.loads(line) for line in finish(process).splitlines()] for process in watchers]

    expected = {(kind, f"p{w}-{i}") for w in range(writers) for i in range(per_writer)
                for kind in ("ADDED", "MODIFIED")}
    for events in streams:
        assert len(events) == expected_events
        assert {(kind, name) for kind, name, _ in events} == expected, "an event was lost or duplicated"
        versions = [int(rv) for _, _, rv in events]
        assert versions == sorted(versions) and len(set(versions)) == len(versions), "events out of order"
    assert streams[0] == streams[1] == streams[2], "watchers disagree on the order of events"
    for w in range(writers):
        names = [name for kind, name, _ in streams[0] if kind == "ADDED" and name.startswith(f"p{w}-")]
        assert names == [f"p{w}-{i}" for i in range(per_writer)], "one writer's events were reordered"


def test_concurrent_read_modify_write_loses_no_update(devcluster: DevCluster, core: client.CoreV1Api,
                                                      namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "counter"}, "data": {"n": "0"}})
    processes = [spawn("incrementer", str(devcluster.kubeconfig), namespace, "counter", "15") for _ in range(4)]
    for process in processes:
        finish(process)
    assert core.read_namespaced_config_map("counter", namespace).data["n"] == "60"


def test_keep_alive_reuses_one_connection(api: client.ApiClient, devcluster: DevCluster, namespace: str) -> None:
    own = devcluster.api_client()
    try:
        core = client.CoreV1Api(own)
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "ka"}, "data": {"n": "0"}})
        for i in range(30):
            core.patch_namespaced_config_map("ka", namespace, {"data": {"n": str(i)}}, _content_type=MERGE)
            core.read_namespaced_config_map("ka", namespace)
        pool = own.rest_client.pool_manager.connection_from_url(devcluster.url)
        assert pool.num_requests >= 61
        assert pool.num_connections == 1, f"{pool.num_connections} connections for {pool.num_requests} requests"
    finally:
        own.close()


def test_error_responses_keep_the_connection_alive(devcluster: DevCluster, namespace: str) -> None:
    own = devcluster.api_client()
    try:
        core = client.CoreV1Api(own)
        for _ in range(10):
            try:
                core.read_namespaced_config_map(unique("absent"), namespace)
            except client.exceptions.ApiException as error:
                assert error.status == 404
        pool = own.rest_client.pool_manager.connection_from_url(devcluster.url)
        assert pool.num_connections == 1
    finally:
        own.close()

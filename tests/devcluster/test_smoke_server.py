"""Smoke tests owned by the devcluster author: the CLI contract, the admin helpers on ``DevCluster`` and the
kubectl paths that need server-side support (protobuf bodies, Table printing, OpenAPI v3 for apply)."""

from __future__ import annotations

import http.client
import json
import subprocess
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from devcluster.testing import DevCluster
from tests.waiting import wait_for


@pytest.fixture()
def cluster() -> Iterator[DevCluster]:
    with DevCluster() as running:
        yield running


def status_of(cluster: DevCluster, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    try:
        return 200, cluster.request(method, path, body)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_kubeconfig_points_at_the_server(cluster: DevCluster) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    server = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    assert server["cluster"]["server"] == cluster.url
    assert cluster.url.startswith("http://127.0.0.1:")


def test_crud_and_resource_versions_over_raw_http(cluster: DevCluster) -> None:
    made = cluster.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a"}})
    got = cluster.request("GET", "/api/v1/namespaces/default/configmaps/a")
    assert got["metadata"]["uid"] == made["metadata"]["uid"]
    listed = cluster.request("GET", "/api/v1/namespaces/default/configmaps")
    assert listed["kind"] == "ConfigMapList" and int(listed["metadata"]["resourceVersion"]) >= int(
        made["metadata"]["resourceVersion"])
    code, body = status_of(cluster, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a"}})
    assert (code, body["reason"]) == (409, "AlreadyExists")


def test_watch_stream_delivers_events_in_order(cluster: DevCluster) -> None:
    start = cluster.request("GET", "/api/v1/namespaces/default/configmaps")["metadata"]["resourceVersion"]
    for name in ("w1", "w2"):
        cluster.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})
    cluster.request("DELETE", "/api/v1/namespaces/default/configmaps/w1")
    host, port = cluster.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={start}")
        response = connection.getresponse()
        events = [json.loads(response.readline()) for _ in range(3)]
    finally:
        connection.close()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "w1"), ("ADDED", "w2"), ("DELETED", "w1")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)


def test_counters_faults_and_history_helpers(cluster: DevCluster) -> None:
    cluster.reset_counters()
    cluster.request("GET", "/api/v1/namespaces/default/configmaps")
    counts = cluster.counters()
    assert counts["counts"]["list"]["configmaps"]["default"] == 1
    assert counts["by_verb"]["list"] == 1

    cluster.set_faults(error_rate=1.0, codes=[429], retry_after=2)
    code, body = status_of(cluster, "GET", "/api/v1/namespaces")
    assert (code, body["reason"]) == (429, "TooManyRequests")
    assert cluster.request("GET", "/_devcluster/counters")["total"] >= 2  # admin API is never faulted
    cluster.clear_faults()
    assert status_of(cluster, "GET", "/api/v1/namespaces")[0] == 200

    old = cluster.request("GET", "/api/v1/namespaces/default/configmaps")["metadata"]["resourceVersion"]
    for i in range(5):
        cluster.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": f"h{i}"}})
    cluster.set_history(2)
    host, port = cluster.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={old}")
        event = json.loads(connection.getresponse().readline())
    finally:
        connection.close()
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"


@pytest.mark.kubectl
def test_kubectl_create_uses_protobuf_and_get_prints_tables(cluster: DevCluster) -> None:
    def kubectl(*args: str) -> str:
        result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        return result.stdout

    kubectl("create", "namespace", "smoke")
    kubectl("create", "configmap", "cfg", "-n", "smoke", "--from-literal=k=v")
    kubectl("create", "secret", "generic", "sec", "-n", "smoke", "--from-literal=p=w")
    assert cluster.request("GET", "/api/v1/namespaces/smoke/configmaps/cfg")["data"] == {"k": "v"}
    assert cluster.request("GET", "/api/v1/namespaces/smoke/secrets/sec")["type"] == "Opaque"
    header = kubectl("get", "secrets", "-n", "smoke").splitlines()[0].split()
    assert header == ["NAME", "TYPE", "DATA", "AGE"]
    kubectl("delete", "namespace", "smoke")
    wait_for(lambda: status_of(cluster, "GET", "/api/v1/namespaces/smoke")[0] == 404, timeout=10,
             message="namespace removed")

"""Which update ops change what the API server stores (poolboy/domain/server_defaults.py): the diff from a live
Deployment, Service or Secret to its template is full of the server's own defaults, allocations and normalisations."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from poolboy.domain import server_defaults
from poolboy.utils import jsonpatch

TEMPLATE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}
#: what the server stores for TEMPLATE on a dry run: defaults and a clusterIP of its own choosing
STORED = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "poolboy-dry-run-x", "namespace": "ns"},
          "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "selector": {"app": "web"},
                   "clusterIP": "10.0.0.7", "type": "ClusterIP", "sessionAffinity": "None"}}
LIVE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns", "uid": "u",
                                                            "resourceVersion": "r1"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "selector": {"app": "web"},
                 "clusterIP": "10.0.0.3", "type": "ClusterIP", "sessionAffinity": "None"}}


def test_removing_defaults_and_allocated_values_changes_nothing() -> None:
    ops = jsonpatch.diff(LIVE, TEMPLATE)
    assert {op["op"] for op in ops} == {"remove"}  # the raw diff would take every default away
    assert [op for op in server_defaults.without_stored_noise(ops, LIVE, STORED)
            if not op["path"].startswith("/metadata/")] == []


def test_a_real_change_stays_and_a_normalised_value_does_not() -> None:
    template = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "ports": [{"port": 8080}], "sessionAffinity": "None"}}
    stored = {**STORED, "spec": {**STORED["spec"], "ports": [{"port": 8080, "protocol": "TCP", "targetPort": 8080}]}}
    ops = [op for op in jsonpatch.diff(LIVE, template) if not op["path"].startswith("/metadata/")]
    kept = server_defaults.without_stored_noise(ops, LIVE, stored)
    assert {"op": "replace", "path": "/spec/ports/0/port", "value": 8080} in kept
    assert all(op["path"] != "/spec/clusterIP" for op in kept)


def test_without_a_stored_view_nothing_is_dropped() -> None:
    ops = jsonpatch.diff(LIVE, TEMPLATE)
    assert server_defaults.without_stored_noise(ops, LIVE, None) == ops


class _Server:
    """Answers the two dry runs as an API server that stores nothing new would, and counts them."""

    def __init__(self) -> None:
        self.dry_runs: list[str] = []

    def create(self, body: dict[str, Any], *, dry_run: bool = False, strict: bool = False) -> dict[str, Any]:
        assert dry_run and strict and body["metadata"]["generateName"] == server_defaults.DRY_RUN_PREFIX
        self.dry_runs.append("create")
        return STORED

    def patch_json(self, api_version: str, kind: str, name: str, namespace: str | None, ops: list[dict], *,
                   status: bool = False, strict: bool = False, dry_run: bool = False) -> dict[str, Any]:
        assert dry_run and strict
        self.dry_runs.append("patch")
        return {**LIVE, "metadata": {**LIVE["metadata"], "managedFields": []}}  # what it would store: the same


def test_each_question_is_put_to_the_server_once_per_definition_and_live_version() -> None:
    server = _Server()
    ctx: Any = SimpleNamespace(kube=server)
    template = {**TEMPLATE, "metadata": {**TEMPLATE["metadata"], "labels": {"added": "later"}}}
    ops = jsonpatch.diff(LIVE, template)
    for _ in range(3):
        assert server_defaults.effective_ops(ctx, template, LIVE, ops) == []
    assert server.dry_runs == ["create", "patch"]


def test_ops_on_metadata_alone_are_sent_without_a_question() -> None:
    server = _Server()
    ops = [{"op": "add", "path": "/metadata/annotations/poolboy.gpte.redhat.com~1resource-claim-name", "value": "c"}]
    assert server_defaults.effective_ops(SimpleNamespace(kube=server), TEMPLATE, LIVE, ops) == ops
    assert server.dry_runs == []

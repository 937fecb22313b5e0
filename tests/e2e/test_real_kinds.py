"""Managed resources of the kinds providers manage in the field — a Deployment, a Service, a Secret, a ConfigMap and a
custom resource of another operator's CRD — on the real API server, which adds defaults and normalises values
(docs/behaviour.md#handles): a converged claim makes no write, a user's change still propagates, ``updateFilters``
still refuse what they refuse, and what the server refuses is a clear error, not a crash or a hot loop.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from engine.sweeps import cached_object_key
from poolboy import keys
from poolboy.settings import Settings
from stack.local import LocalStack
from tests.clusters import E2E_CLUSTER
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import NS, D, condition, parse, status
from tests.e2e.test_resources_claims import User, reference
from tests.waiting import wait_for
from workqueue import keyspace

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(E2E_CLUSTER != "real", reason="devcluster serves neither these kinds nor defaults")]

WIDGETS = "widgets.kinds.example.test"
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": WIDGETS},
    "spec": {"group": "kinds.example.test", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "size": {"type": "string", "default": "medium"},
                     "replicas": {"type": "integer", "default": 1},
                     "color": {"type": "string"}}}}}}}]},
}
#: what a claim asks for: a template per kind, with fields the server defaults left out
TEMPLATES: dict[str, dict[str, Any]] = {
    "deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
            {"name": "web", "image": "registry.example/web:1", "resources": {"requests": {"cpu": "0.5"}}}]}}}},
    "service": {"apiVersion": "v1", "kind": "Service", "metadata": {"labels": {"tier": "front"}},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    "secret": {"apiVersion": "v1", "kind": "Secret", "stringData": {"password": "s3cret"}},
    "configmap": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": "hello"}},
    "widget": {"apiVersion": "kinds.example.test/v1", "kind": "Widget", "spec": {"color": "blue"}},
}
#: broad filters, so that an op undoing a server default would pass them and show as a write; the Service's lets
#: only labels through
FILTERS: dict[str, list[dict[str, Any]]] = {
    "deployment": [{"pathMatch": "/spec/.*"}],
    "service": [{"pathMatch": "/metadata/labels/.*"}],
    "secret": [{"pathMatch": "/stringData.*"}, {"pathMatch": "/data/.*"}, {"pathMatch": "/type"}],
    "configmap": [{"pathMatch": "/data/.*"}],
    "widget": [{"pathMatch": "/spec/.*"}],
}
KINDS = tuple(TEMPLATES)
WRITES = ("create", "update", "patch", "delete")
#: the stack's slow re-check of a permanent error, in seconds
RECHECK = float(FAST_INTERVALS["POOLBOY_PERMANENT_ERROR_RECHECK"])
#: the stack's periodic sweeps of claims and of handles, in seconds: each runs an object whose last run did not succeed
SWEEP_INTERVALS = tuple(float(FAST_INTERVALS[f"POOLBOY_MANAGE_{kind}_INTERVAL"]) for kind in ("CLAIMS", "HANDLES"))
#: the operator's settings as far as the test reads its Redis (the domain names the cache's keys)
SETTINGS = Settings()


@pytest.fixture(scope="module")
def widgets(stack: LocalStack) -> None:
    """Another operator's CRD, with defaults in its schema."""
    assert stack.cluster is not None
    stack.cluster.install([WIDGET_CRD])


def kinds_claim(user: User, ns: str, name: str, templates: dict[str, dict[str, Any]] | None = None) -> None:
    for kind in KINDS:
        user.provider(f"{ns}-{kind}", {"override": {"metadata": {"namespace": ns}}, "healthCheck": "true",
                                       "readinessCheck": "true", "updateFilters": FILTERS[kind]})
    chosen = templates or TEMPLATES
    user.claim(ns, name, {"resources": [{"name": kind, "provider": {"name": f"{ns}-{kind}"},
                                         "template": chosen[kind]} for kind in KINDS]})


def writes_in(user: User, ns: str) -> dict[tuple[str, str], int]:
    """Writes the API server served so far to objects in ``ns`` and to the operator's handles, by (verb, resource)."""
    counted: dict[tuple[str, str], int] = {}
    for item in user.api_counters()["items"]:
        inside = item["namespace"] == ns or (item["namespace"] == NS and item["resource"].startswith("resourcehandles"))
        if inside and item["verb"] in WRITES and item["resource"] != "events":
            counted[(item["verb"], item["resource"])] = counted.get((item["verb"], item["resource"]), 0) + item["count"]
    return counted


def live(user: User, claim: dict[str, Any], index: int) -> dict[str, Any]:
    ref = reference(user, claim, index)
    group, _, version = ref["apiVersion"].rpartition("/")
    plural = {"Deployment": "deployments", "Service": "services", "Secret": "secrets", "ConfigMap": "configmaps",
              "Widget": "widgets"}[ref["kind"]]
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    assert user.stack.cluster is not None
    return dict(user.stack.cluster.request("GET", f"{prefix}/namespaces/{ref['namespace']}/{plural}/{ref['name']}"))


def work_keys_due(user: User, work: dict[str, tuple[str, str | None]]) -> dict[str, dict[str, float]]:
    """Per claim, the re-checks scheduled for its own work key and its handle's, by key."""
    return {name: {key: at for key, at in zip(work[name], dues, strict=True) if key is not None and at is not None}
            for name, dues in user.rechecks(work).items()}


def scheduled_rechecks(user: User, work: dict[str, tuple[str, str | None]]) -> dict[str, float] | None:
    """The re-checks due within about one re-check interval, by work key, once every claim has one (a later time in
    the delaying queue, a lifespan's end, is not a re-check)."""
    horizon = time.time() + 1.5 * RECHECK
    near = [{key: at for key, at in due.items() if at <= horizon} for due in work_keys_due(user, work).values()]
    return {key: at for due in near for key, at in due.items()} if all(near) else None


def rechecked(user: User, work: dict[str, tuple[str, str | None]], opened: dict[str, float]) -> dict[str, float] | None:
    """The next re-check of every key of ``opened``, once each has run and scheduled it (its time moved on)."""
    current = {key: at for due in work_keys_due(user, work).values() for key, at in due.items()}
    return current if all(current.get(key, 0.0) > at for key, at in opened.items()) else None


def runs_allowed(window: float) -> int:
    """How often one refused claim may be tried within ``window`` seconds at most: its re-check, and as a margin each
    sweep of claims and of handles that falls in the window (a refused run marks its object clean, so the sweeps
    pass it over unless it changed)."""
    return 1 + sum(1 + int(window // interval) for interval in SWEEP_INTERVALS)


def clean_mark(user: User, key: str) -> tuple[str | None, str | None]:
    """The shared cache's record of the object's last successful run: the version it saw and when it is next due
    for a refresh (each run's own: a new one shows a run ended)."""
    client = redis.Redis.from_url(user.stack.redis_url, decode_responses=True)
    try:
        clean, refresh = client.hmget(cached_object_key(SETTINGS, key), "clean", "refresh")
        return clean, refresh
    finally:
        client.close()


def reconciled(user: User, key: str, obj: dict[str, Any] | None) -> bool:
    """The object's last run succeeded at the version it is at, and no run is owed or going on."""
    client = redis.Redis.from_url(user.stack.redis_url, decode_responses=True)
    try:
        owed = client.exists(keyspace.pending(key), keyspace.active(key))
    finally:
        client.close()
    return obj is not None and not owed and clean_mark(user, key)[0] == obj["metadata"]["resourceVersion"]


def test_a_converged_claim_of_real_kinds_makes_no_write(stack: LocalStack, widgets: None) -> None:
    user = User(stack)
    ns = user.namespace("kinds")
    kinds_claim(user, ns, "c")
    claim = user.wait_ready(ns, "c")
    deployment = live(user, claim, KINDS.index("deployment"))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    # the server's defaults and normalisation are there, none of them in the template
    assert container["imagePullPolicy"] == "IfNotPresent" and container["resources"]["requests"]["cpu"] == "500m"
    assert live(user, claim, KINDS.index("service"))["spec"]["ports"][0]["protocol"] == "TCP"
    secret = live(user, claim, KINDS.index("secret"))
    assert "stringData" not in secret and secret["type"] == "Opaque"
    assert live(user, claim, KINDS.index("widget"))["spec"] == {"color": "blue", "size": "medium", "replicas": 1}

    # settled: the first runs' writes are over once a few seconds pass without one
    def quiet() -> bool:
        before = writes_in(user, ns)
        time.sleep(3)
        return writes_in(user, ns) == before

    wait_for(quiet, timeout=60, interval=0, message="the claim's writes settle")
    # the claim and its handle run again (their clean marks dropped, the next sweep runs them) and write nothing
    work = (keys.make(keys.CLAIM, ns, "c"), keys.make(keys.HANDLE, NS, status(claim)["resourceHandle"]["name"]))
    before, runs = writes_in(user, ns), {key: clean_mark(user, key)[1] for key in work}
    client = redis.Redis.from_url(user.stack.redis_url, decode_responses=True)
    try:
        for key in work:
            client.hdel(cached_object_key(SETTINGS, key), "clean")
    finally:
        client.close()
    wait_for(lambda: all(clean_mark(user, key)[1] != runs[key] and clean_mark(user, key)[0] for key in work),
             timeout=6 * max(SWEEP_INTERVALS), interval=0.2, message="a sweep ran the claim and its handle again")
    after = writes_in(user, ns)
    assert after == before, {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key)}


def test_a_users_change_propagates_and_filters_still_refuse(stack: LocalStack, widgets: None) -> None:
    user = User(stack)
    ns = user.namespace("kinds-change")
    kinds_claim(user, ns, "c")
    claim = user.wait_ready(ns, "c")
    path = "/spec/resources/{}/template"
    user.json_patch_claim(ns, "c", [
        {"op": "replace", "path": path.format(KINDS.index("deployment")) + "/spec/replicas", "value": 3},
        {"op": "replace", "path": path.format(KINDS.index("service")) + "/spec/ports/0/port", "value": 8080},
        {"op": "replace", "path": path.format(KINDS.index("service")) + "/metadata/labels/tier", "value": "back"},
        {"op": "replace", "path": path.format(KINDS.index("secret")) + "/stringData/password", "value": "n3w"},
        {"op": "add", "path": path.format(KINDS.index("widget")) + "/spec/size", "value": "large"},
    ])
    wait_for(lambda: live(user, claim, KINDS.index("deployment"))["spec"]["replicas"] == 3, timeout=20,
             message="replicas propagated")
    wait_for(lambda: live(user, claim, KINDS.index("service"))["metadata"]["labels"]["tier"] == "back", timeout=20,
             message="the Service's label propagated")
    wait_for(lambda: live(user, claim, KINDS.index("widget"))["spec"]["size"] == "large", timeout=20,
             message="the Widget's size propagated")
    wait_for(lambda: live(user, claim, KINDS.index("secret"))["data"]["password"] == "bjN3", timeout=20,
             message="the Secret's stringData propagated into its data")
    assert live(user, claim, KINDS.index("service"))["spec"]["ports"][0]["port"] == 80  # the filter refuses it


def test_what_the_server_refuses_is_a_clear_error_without_a_hot_loop(stack: LocalStack, widgets: None) -> None:
    user = User(stack)
    ns = user.namespace("kinds-bad")
    user.provider(f"{ns}-any", {"override": {"metadata": {"namespace": ns}}, "healthCheck": "true",
                                "readinessCheck": "true"})
    container = {"name": "twin", "image": "registry.example/web:1"}
    bad = {
        # two containers of one name: a duplicate key of a list-map
        "duplicate": ({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [container, container]}}}},
            "ResourceRejected", 'Duplicate value: "twin"'),
        "unknown": ({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}, "colour": "blue"},
                    "ResourceRejected", 'unknown field "colour"'),
        "nokind": ({"apiVersion": "kinds.example.test/v9", "kind": "Gadget", "spec": {}}, "ApiMissing",
                   "kinds.example.test/v9"),
    }
    for name, (template, _, _) in bad.items():
        user.claim(ns, name, {"resources": [{"provider": {"name": f"{ns}-any"}, "template": template}]})
    for name, (_, reason, text) in bad.items():
        claim = user.wait_synced_error(ns, name, reason)
        assert text in condition(claim, "Synced")["message"], (name, condition(claim, "Synced"))
        user.wait_event(ns, name, reason)
    # no hot loop: a refusal is re-checked at the slow interval, and tried no more often than that (with the sweeps
    # as a margin). The window opens once every claim's re-check (its own or its handle's) is scheduled
    # and closes once each has run and scheduled the next
    work = user.work_keys(ns, bad)
    opened = wait_for(lambda: scheduled_rechecks(user, work), timeout=30, interval=0.2,
                      message=f"every refusal's re-check scheduled: {user.rechecks(work)}")
    before, began = writes_in(user, ns), time.monotonic()
    closed = wait_for(lambda: rechecked(user, work, opened), timeout=3 * RECHECK, interval=0.2,
                      message=f"every refusal re-checked: {opened} -> {user.rechecks(work)}")
    after, window = writes_in(user, ns), time.monotonic() - began
    assert all(closed[key] - at >= RECHECK for key, at in opened.items()), ("re-checked sooner", opened, closed)
    tries = sum(after.values()) - sum(before.values())
    assert tries <= len(bad) * runs_allowed(window), (window, {
        key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key)})


def test_a_status_past_the_size_limit_is_an_error_not_a_loop(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("kinds-big")
    user.provider(f"{ns}-big", {"override": {"metadata": {"namespace": ns}}, "healthCheck": "true",
                                "readinessCheck": "true"})
    template = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": "hello"}}
    user.claim(ns, "c", {"resources": [{"provider": {"name": f"{ns}-big"}, "template": template}] * 2})
    claim = user.wait_ready(ns, "c")
    # someone else fills each ConfigMap: each fits the server's limit, both mirrored into one claim's status do not
    for index in range(2):
        user.core.patch_namespaced_config_map(reference(user, claim, index)["name"], ns,
                                              {"data": {"bulk": "x" * (900 * 1024)}})
    claim = user.wait_synced_error(ns, "c", "StatusTooLarge")
    assert "1500000 bytes" in condition(claim, "Synced")["message"]
    user.wait_event(ns, "c", "StatusTooLarge")
    assert status(claim)["resourceHandle"]["name"]  # still bound, and the rest of the status is there
    assert [r.get("reference", {}).get("kind") for r in status(claim)["resources"]] == ["ConfigMap", "ConfigMap"]
    assert all("state" not in resource for resource in status(claim)["resources"])
    # no loop: once the claim and its handle are reconciled at their versions, a change to the claim runs it once
    # more, and that run, finding the status as it is, writes nothing
    claim_key, handle = keys.make(keys.CLAIM, ns, "c"), status(claim)["resourceHandle"]["name"]
    handle_key = keys.make(keys.HANDLE, NS, handle)
    wait_for(lambda: reconciled(user, claim_key, user.get_claim(ns, "c"))
             and reconciled(user, handle_key, user.get_handle(handle)), timeout=30, interval=0.2,
             message="the claim and its handle reconciled at their versions")
    before, last_run = writes_in(user, ns), clean_mark(user, claim_key)
    settled = user.get_claim(ns, "c")
    # the nudged run in a later second than the status it finds: a condition it re-stamped would show as a write
    synced_at = parse(condition(settled, "Synced")["lastTransitionTime"])
    wait_for(lambda: datetime.now(UTC) >= synced_at + timedelta(seconds=1), timeout=5, message="a second later")
    user.custom.patch_namespaced_custom_object(D, "v1", ns, "resourceclaims", "c",
                                               {"metadata": {"annotations": {"test/nudge": "1"}}})
    wait_for(lambda: clean_mark(user, claim_key)[1] != last_run[1], timeout=30, interval=0.2,
             message="a run of the claim after the change")
    after = writes_in(user, ns)
    written = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key)}
    assert written == {("patch", f"resourceclaims.{D}"): 1}, (  # on failure, what the extra write changed
        f"the change itself is the only write: {written}\nstatus before: {status(settled)}\n"
        f"status after: {status(user.get_claim(ns, 'c'))}\n{stack.logs()}")

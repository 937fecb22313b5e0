"""The bad-input corpus against the real stack: devcluster, Redis, watcher, worker subprocesses and beat.

Every case of ``tests/corpus/cases/`` is applied at once into one stack, next to a healthy provider and claim.
Each case must end as the API's refusal or as a condition with a clear message plus a Warning Event on the
offending object (a case of input at a limit: as its working condition, with no Warning Event); afterwards, during
a measured window, the object must not be reconciled in a hot loop: its resourceVersion and its Warning Events stay
as they are, and the API requests naming it (devcluster's per-object counters) stay within a generous bound. No
component may die, no reconcile may end in an unexpected exception (the worker logs "reconcile failed" for those),
and the healthy claim must bind and become ready regardless.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.corpus.cases import OPERATOR_NAMESPACE, Case, load_all
from tests.e2e.provider_support import condition, config_map_provider
from tests.waiting import wait_for

CASES = load_all()
SETTLE_TIMEOUT = 60.0  # every case must reach its expected outcome within this, all running together
WINDOW = 15.0  # seconds of observation after the conditions appeared
MAX_REQUESTS_IN_WINDOW = 12  # per offending object; periodic sweeps stay far below, a hot loop far above
MAX_MESSAGE = 2048  # a "clear message" is short: no huge values echoed into status
PLURALS = {"ResourceClaim": "resourceclaims", "ResourceProvider": "resourceproviders",
           "ResourcePool": "resourcepools", "ResourcePoolScaling": "resourcepoolscalings",
           "ResourceHandle": "resourcehandles", "ConfigMap": "configmaps"}
HEALTHY_NS = "corpus-healthy"


@dataclass
class Outcome:
    rejection: str | None = None  # the API's message when it refused the offending object
    target: dict[str, Any] | None = None  # the offending object's reference, once it exists
    errors: list[str] = field(default_factory=list)  # objects the API refused that the case did not expect
    observed: dict[str, Any] | None = None  # the offending object once its expectation held
    events: list[Any] = field(default_factory=list)  # Warning Events on it (then)
    window: Window | None = None  # what the measured window saw


@dataclass
class Window:
    requests: int  # API requests naming the object
    before: tuple[str | None, int]  # (resourceVersion, Warning Events) when the window opened
    after: tuple[str | None, int]  # … and when it closed


def _snapshot(cluster: Cluster, target: dict[str, Any]) -> tuple[str | None, int]:
    obj = cluster.get(target) or {}
    return (obj.get("metadata") or {}).get("resourceVersion"), len(cluster.warnings(target))


class Cluster:
    """What an administrator's client sees: the official kubernetes client over HTTP, dynamic for any kind."""

    def __init__(self, stack: LocalStack) -> None:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
        api_client = client.ApiClient(configuration)
        self.dynamic = dynamic.DynamicClient(api_client)
        self.core = client.CoreV1Api(api_client)

    def apply(self, obj: dict[str, Any]) -> None:
        resource = self.dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        resource.create(body=obj, namespace=obj["metadata"]["namespace"])

    def get(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        resource = self.dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        if obj.get("selector"):
            items = resource.get(namespace=obj["metadata"]["namespace"], label_selector=obj["selector"]).to_dict()
            return min(items["items"], key=lambda item: item["metadata"]["name"], default=None)
        try:
            return resource.get(name=obj["metadata"]["name"], namespace=obj["metadata"]["namespace"]).to_dict()
        except dynamic.exceptions.NotFoundError:
            return None

    def warnings(self, obj: dict[str, Any]) -> list[Any]:
        events = self.core.list_namespaced_event(obj["metadata"]["namespace"]).items
        return [e for e in events if e.type == "Warning" and e.involved_object.kind == obj["kind"]
                and e.involved_object.name == obj["metadata"]["name"]]


def _message(error: Exception) -> str:
    body = getattr(error, "body", None) or str(error)
    return body.decode(errors="replace") if isinstance(body, bytes) else str(body)


def _apply_case(cluster: Cluster, case: Case, outcome: Outcome) -> None:
    cluster.core.create_namespace({"metadata": {"name": case.namespace}})
    for obj in case.objects:
        try:
            cluster.apply(obj)
        except (ApiException, dynamic.exceptions.DynamicApiError) as error:
            if obj is case.offending and case.rejected:
                outcome.rejection = _message(error)
            else:
                outcome.errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {_message(error)[:500]}")


def _expectation_met(cluster: Cluster, case: Case, outcome: Outcome) -> bool:
    if case.rejected:
        return True
    obj = cluster.get(case.offending)
    if obj is None:
        return False
    outcome.target = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                      "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}}
    wanted = case.condition
    got = condition(obj, wanted["type"])
    if any(str(got.get(key)) != wanted[key] for key in ("status", "reason")) or \
            wanted.get("message", "") not in (got.get("message") or ""):
        return False
    events = [e for e in cluster.warnings(outcome.target) if case.quiet or e.reason == wanted["reason"]]
    if not events and not case.quiet:
        return False
    outcome.observed, outcome.events = obj, events
    return True


def _requests(counters: dict[str, Any]) -> dict[tuple[str, str, str], int]:
    return {(item["resource"], item["namespace"], item["name"]): item["count"] for item in counters["objects"]}


def _object_key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return PLURALS[obj["kind"]], obj["metadata"]["namespace"], obj["metadata"]["name"]


def _healthy_objects() -> list[dict[str, Any]]:
    v1 = "poolboy.gpte.redhat.com/v1"
    return [{"apiVersion": v1, "kind": "ResourceProvider",
             "metadata": {"name": "corpus-healthy", "namespace": OPERATOR_NAMESPACE},
             "spec": config_map_provider(HEALTHY_NS)},
            {"apiVersion": v1, "kind": "ResourceClaim", "metadata": {"name": "fine", "namespace": HEALTHY_NS},
             "spec": {"provider": {"name": "corpus-healthy", "parameterValues": {"greeting": "still here"}}}}]


@dataclass
class CorpusRun:
    stack: LocalStack
    cluster: Cluster
    outcomes: dict[str, Outcome]
    window: float


@pytest.fixture(scope="module")
def corpus() -> Iterator[CorpusRun]:
    # deeply nested cases: the kubernetes client serialises recursively, as kubectl (Go) would not mind
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    log_dir = os.environ.get("POOLBOY_CORPUS_LOG_DIR")  # keep the components' logs for a post-mortem
    options = e2e_options(workers=1, concurrency=2, log_dir=Path(log_dir) if log_dir else None)
    with LocalStack(options) as stack:
        cluster = Cluster(stack)
        outcomes = {case.id: Outcome() for case in CASES}
        cluster.core.create_namespace({"metadata": {"name": HEALTHY_NS}})
        for case in CASES:
            _apply_case(cluster, case, outcomes[case.id])
        for obj in _healthy_objects():
            cluster.apply(obj)

        pending = {case.id: case for case in CASES}

        def all_met() -> bool:
            for case_id, case in list(pending.items()):
                if _expectation_met(cluster, case, outcomes[case_id]):
                    del pending[case_id]
            return not pending

        with contextlib.suppress(AssertionError):  # each pending case fails on its own below, with what it saw
            wait_for(all_met, timeout=SETTLE_TIMEOUT, interval=0.5, message="every case's expected outcome")
        # the measured window: nothing is applied any more, so the offending objects should now be quiet
        watched = {case.id: outcomes[case.id].target for case in CASES
                   if outcomes[case.id].observed is not None and outcomes[case.id].target is not None}
        before = {case_id: _snapshot(cluster, target) for case_id, target in watched.items()}
        requests_before = _requests(stack.cluster.counters())
        started = time.monotonic()
        time.sleep(WINDOW)  # a measurement window, not a wait for a state: the assertion is on what it saw
        requests_after = _requests(stack.cluster.counters())
        for case_id, target in watched.items():
            key = _object_key(target)
            outcomes[case_id].window = Window(
                requests=requests_after.get(key, 0) - requests_before.get(key, 0),
                before=before[case_id], after=_snapshot(cluster, target))
        yield CorpusRun(stack, cluster, outcomes, time.monotonic() - started)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_ends_in_a_clear_error(corpus: CorpusRun, case: Case) -> None:
    outcome = corpus.outcomes[case.id]
    assert not outcome.errors, f"{case.id}: objects the API refused unexpectedly: {outcome.errors}"
    if case.rejected:
        assert outcome.rejection is not None, f"{case.id}: the API accepted the offending object"
        assert case.rejected in outcome.rejection, f"{case.id}: {outcome.rejection[:500]}"
        return
    latest = corpus.cluster.get(outcome.target or case.offending)
    assert outcome.observed is not None, (
        f"{case.id}: expected {case.condition} and a Warning Event; last status: "
        f"{(latest or {}).get('status')}\n{corpus.stack.logs()[-4000:]}")
    message = condition(outcome.observed, case.condition["type"])["message"]
    assert len(message) <= MAX_MESSAGE, f"{case.id}: condition message of {len(message)} characters"
    if case.quiet:
        assert not outcome.events, f"{case.id}: Warning Events on input within the limits: " \
                                   f"{[(e.reason, e.message[:200]) for e in outcome.events]}"
    # no hot loop: no writes, no new Warnings, few requests while nothing changes
    window = outcome.window
    assert window is not None
    assert window.after[0] == window.before[0], f"{case.id}: the object kept changing after its condition appeared"
    assert window.after[1] == window.before[1], f"{case.id}: Warning Events kept coming"
    assert window.requests <= MAX_REQUESTS_IN_WINDOW, \
        f"{case.id}: {window.requests} API requests on the object in {corpus.window:.0f}s"


@pytest.mark.slow
def test_healthy_claim_binds_alongside_the_corpus(corpus: CorpusRun) -> None:
    claim = {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
             "metadata": {"name": "fine", "namespace": HEALTHY_NS}}
    ready = wait_for(lambda: condition(corpus.cluster.get(claim) or {}, "Ready").get("status") == "True",
                     timeout=30, interval=0.2, message="the healthy claim ready")
    assert ready
    config_maps = corpus.cluster.core.list_namespaced_config_map(HEALTHY_NS).items
    assert [cm.data.get("greeting") for cm in config_maps] == ["still here"]


@pytest.mark.slow
def test_no_component_crashed_and_no_reconcile_failed_unexpectedly(corpus: CorpusRun) -> None:
    dead = [child.name for child in corpus.stack.children if not child.alive]
    assert not dead, f"components died: {dead}\n{corpus.stack.logs()}"
    for child in corpus.stack.children:
        text = child.log_path.read_text(errors="replace")
        assert "reconcile failed" not in text, f"{child.name}: an unexpected exception\n{_around(text)}"
        assert "Traceback" not in text, f"{child.name}: a traceback\n{_around(text, 'Traceback')}"


def test_corpus_has_at_least_40_cases() -> None:
    assert len(CASES) >= 40
    assert len({case.namespace for case in CASES}) == len(CASES)


def _around(text: str, needle: str = "reconcile failed") -> str:
    index = text.find(needle)
    return text[max(0, index - 500):index + 3000]

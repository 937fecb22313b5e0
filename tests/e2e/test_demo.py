"""The README's walk-through as a user sees it in kubectl: ``kubectl apply -f examples/`` gives a claim served from
the pool (``kubectl wait --for=condition=Ready`` returns), the pool refills, its columns agree with its handles
within a second all along, and a claim with a mistyped provider says what is wrong in its columns and Event."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import watch

from stack.local import LocalStack
from tests.e2e.provider_support import NS, D, User, kubectl
from tests.waiting import wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = [pytest.mark.kubectl]

#: how long a pool's columns may disagree with its handles
COUNT_LAG = 1.0


class Timeline:
    """Every watch event of one plural in the operator namespace, with the monotonic time it arrived (list, then
    watch from the list's resourceVersion, so no event is missed)."""

    def __init__(self, user: User, plural: str) -> None:
        self.user, self.plural = user, plural
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        listed = user.custom.list_namespaced_custom_object(D, "v1", NS, plural)
        self._version = listed["metadata"]["resourceVersion"]
        now = time.monotonic()
        self.events += [(now, "ADDED", item) for item in listed["items"]]
        self._thread.start()

    def _run(self) -> None:
        stream = watch.Watch()
        while not self._stop.is_set():
            for event in stream.stream(self.user.custom.list_namespaced_custom_object, D, "v1", NS, self.plural,
                                       resource_version=self._version, timeout_seconds=1):
                self.events.append((time.monotonic(), event["type"], event["object"]))
                self._version = event["object"]["metadata"]["resourceVersion"]
                if self._stop.is_set():
                    return

    def stop(self) -> None:
        self._stop.set()

    def join(self) -> list[tuple[float, str, dict[str, Any]]]:
        self._thread.join(timeout=10)
        return list(self.events)


@dataclass(frozen=True)
class Counts:
    available: int
    ready: int


def pool_counts_over_time(handles: list[tuple[float, str, dict[str, Any]]],
                          pools: list[tuple[float, str, dict[str, Any]]],
                          pool: str) -> list[tuple[float, Counts, Counts]]:
    """After every event, (time, what the handles say — unbound, not deleting, and of those ready —, what the
    pool's status says)."""
    unbound: dict[str, bool] = {}
    shown = Counts(0, 0)
    timeline: list[tuple[float, Counts, Counts]] = []
    for at, type_, obj in sorted(handles + pools, key=lambda event: event[0]):
        if obj["kind"] == "ResourcePool":
            if obj["metadata"]["name"] == pool:
                count = (obj.get("status") or {}).get("resourceHandleCount") or {}
                shown = Counts(count.get("available", 0), count.get("ready", 0))
        elif ((obj.get("spec") or {}).get("resourcePool") or {}).get("name") == pool:
            name = obj["metadata"]["name"]
            if type_ == "DELETED" or obj["spec"].get("resourceClaim") or obj["metadata"].get("deletionTimestamp"):
                unbound.pop(name, None)
            else:
                unbound[name] = (obj.get("status") or {}).get("ready") is True
        truth = Counts(len(unbound), sum(unbound.values()))
        timeline.append((at, truth, shown))
    return timeline


def longest_disagreement(timeline: list[tuple[float, Counts, Counts]]) -> tuple[float, str]:
    """The longest time the pool's status differed from its handles (until the last event, when it still does),
    and what they said then."""
    longest, since, what, seen = 0.0, None, "", ""
    for at, truth, shown in [*timeline, (timeline[-1][0], Counts(-1, -1), Counts(-1, -1))]:
        if truth != shown and since is None:
            since, seen = at, f"handles {truth}, pool {shown}"
        elif truth == shown and since is not None:
            if at - since > longest:
                longest, what = at - since, seen
            since = None
    return longest, what


def test_the_examples_claim_binds_a_pool_handle_and_the_pool_refills_with_current_counts(stack: LocalStack) -> None:
    user = User(stack)
    handles, pools = Timeline(user, "resourcehandles"), Timeline(user, "resourcepools")
    try:
        applied = kubectl(stack, "apply", "-f", str(EXAMPLES))
        assert applied.returncode == 0, applied.stderr
        waited = kubectl(stack, "wait", "--for=condition=Ready", "--timeout=60s", "-n", "demo", "rclaim/hello")
        assert waited.returncode == 0, waited.stderr + "\n" + stack.logs()
        state = kubectl(stack, "get", "rclaim", "-n", "demo", "hello",
                        "-o", "jsonpath={.status.resources[0].state.data.greeting}")
        assert state.stdout == "hello"
        name = kubectl(stack, "get", "rclaim", "-n", "demo", "hello",
                       "-o", "jsonpath={.status.resourceHandle.name}").stdout
        handle = user.get_handle(name) or {}
        assert (handle.get("spec") or {}).get("resourcePool", {}).get("name") == "hello", \
            f"the walk-through's claim got a handle of its own, not one of the pool's: {handle.get('spec')}"

        def refilled() -> bool:
            count = ((user.custom.get_namespaced_custom_object(D, "v1", NS, "resourcepools", "hello")
                      .get("status") or {}).get("resourceHandleCount") or {})
            return (count.get("available"), count.get("ready")) == (2, 2)

        wait_for(refilled, timeout=60, interval=0.1, message="pool hello refilled to 2 available, 2 ready")
        full = Counts(2, 2)
        wait_for(lambda: pool_counts_over_time(handles.events, pools.events, "hello")[-1][1:] == (full, full),
                 timeout=10, interval=0.05, message="the watches to have seen the refill")
    finally:
        handles.stop()
        pools.stop()
    timeline = pool_counts_over_time(handles.join(), pools.join(), "hello")
    longest, what = longest_disagreement(timeline)
    assert longest <= COUNT_LAG, f"pool hello's counts lagged its handles {longest:.2f}s ({what})"


def columns(stack: LocalStack, namespace: str, name: str) -> dict[str, str]:
    """``kubectl get rclaim -o wide`` of one claim, by column (cut where the header's columns start: a message has
    spaces); a cell with no value is ``""``, however kubectl marks it."""
    lines = kubectl(stack, "get", "rclaim", "-n", namespace, name, "-o", "wide").stdout.splitlines()
    if len(lines) < 2:
        return {}
    header, row = lines[0], lines[1]
    starts = [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 1] == " ")]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    cells = {header[a:b].strip(): row[a:b].strip() for a, b in bounds}
    return {column: "" if cell in ("<none>", "<nil>") else cell for column, cell in cells.items()}


def test_a_mistyped_provider_shows_in_the_claims_columns_with_the_nearest_name(stack: LocalStack) -> None:
    user = User(stack)
    for manifest in ("00-namespaces.yaml", "10-provider.yaml"):
        assert kubectl(stack, "apply", "-f", str(EXAMPLES / manifest)).returncode == 0
    user.claim("demo", "typo", {"provider": {"name": "helo", "parameterValues": {"greeting": "hi"}}})
    row = wait_for(lambda: (found := columns(stack, "demo", "typo")).get("SYNCED") == "ProviderNotFound" and found,
                   timeout=20, interval=0.1, message="the claim's SYNCED column to say ProviderNotFound")
    message = "ResourceProvider helo not found; did you mean hello?"
    assert {key: row.get(key) for key in ("HEALTHY", "READY", "BOUND", "REASON", "MESSAGE")} == \
        {"HEALTHY": "Unknown", "READY": "False", "BOUND": "", "REASON": "ProviderNotFound", "MESSAGE": message}
    wait_for(lambda: [e for e in user.events("demo", "typo") if e.type == "Warning" and e.message == message],
             timeout=10, message="a Warning Event naming the nearest provider")

    user.patch_claim("demo", "typo", {"spec": {"provider": {"name": "hello"}}})
    ready = wait_for(lambda: (found := columns(stack, "demo", "typo")).get("READY") == "True" and found,
                     timeout=30, interval=0.1, message="the corrected claim Ready")
    assert {key: ready.get(key) for key in ("HEALTHY", "SYNCED", "BOUND", "REASON", "MESSAGE")} == \
        {"HEALTHY": "True", "SYNCED": "Synced", "BOUND": "True", "REASON": "", "MESSAGE": ""}

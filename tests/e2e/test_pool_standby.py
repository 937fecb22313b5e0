"""Pools with standby on the real control plane (docs/pools.md, "Standby"; docs/behaviour.md#standby), as an
administrator and a user see them: Machines of the stand-in controller (``tests/standin.py``) whose ``spec.running``
the standby patch flips.

One scenario walks a pool's whole life with standby (standby after ready, an instant bind of the running handle,
binds of standby handles that resume, a handle that never resumes replaced); another shows that a pool without
standby (or with an unusable one) runs every handle and shows no state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stack.local import LocalStack
from tests import standin
from tests.e2e.provider_support import NS, D, User, condition, kubectl, status
from tests.waiting import wait_for

READY = "status is defined and status.ready | default(false)"


@pytest.fixture(scope="module")
def machines(stack: LocalStack) -> Iterator[standin.StandInController]:
    """The Machine kind, Poolboy's grant to manage it, and its stand-in controller running."""
    assert stack.cluster is not None, "needs the real control plane"
    api_client = stack.cluster.api_client()
    standin.install_crd(api_client)
    stack.grant(standin.GRANT)
    with standin.StandInController(api_client, boot_seconds=1.0, stop_seconds=0.2).running() as controller:
        yield controller


def machine_provider(namespace: str, **extra: Any) -> dict[str, Any]:
    """A provider of Machines that are ready once their controller says so; ``extra`` adds e.g. its standby."""
    return {"template": {"enable": True, "definition": {
                "apiVersion": standin.API_VERSION, "kind": standin.KIND, "metadata": {"namespace": namespace},
                "spec": {"size": "small"}}},
            "override": {"metadata": {"name": "m-{{ guid }}"}},
            "healthCheck": "true", "readinessCheck": READY, **extra}


def machine_of(user: User, handle: dict[str, Any]) -> dict[str, Any] | None:
    return standin.machine_of(user.custom, handle)


def counts(user: User, pool: str) -> dict[str, Any]:
    return status(user.get_pool(pool)).get("resourceHandleCount") or {}


def wait_counts(user: User, pool: str, running: int, standby: int, timeout: float = 20) -> None:
    wait_for(lambda: (lambda c: c.get("running") == running and c.get("standby") == standby
                      and c.get("available") == running + standby)(counts(user, pool)),
             timeout=timeout, interval=0.2, message=f"pool {pool}: {running} running, {standby} on standby "
                                                    f"(last {counts(user, pool)})")


def rpool_row(stack: LocalStack, pool: str) -> dict[str, str]:
    """``kubectl get rpool`` as an administrator reads it: the pool's row by column header."""
    result = kubectl(stack, "get", "rpool", pool, "-n", NS)
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()[:2]
    starts = [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 1] == " ")]
    bounds = list(zip(starts, [*starts[1:], len(row) + 1], strict=True))
    return {header[a:b].strip(): row[a:b].strip() for a, b in bounds}


def ready(claim: dict[str, Any]) -> bool:
    return condition(claim, "Ready").get("status") == "True"


def reasons(user: User, namespace: str, name: str) -> list[str]:
    return [e.reason for e in user.events(namespace, name)]


def test_a_pool_keeps_one_handle_running_resumes_standby_ones_on_bind_and_replaces_one_that_does_not_resume(
        stack: LocalStack, machines: standin.StandInController) -> None:
    user = User(stack)
    ns = user.namespace("standby")
    user.provider("sb-machine", machine_provider(ns, standby={"patch": {"spec": {"running": False}},
                                                              "resumeTimeout": "1m"}))
    user.pool("sb-pool", {"minAvailable": 3, "provider": {"name": "sb-machine"},
                          "standby": {"running": 1, "resumeTimeout": "5s"}})

    # standby after ready: one runs, two are on standby with their Machines stopped
    wait_counts(user, "sb-pool", running=1, standby=2, timeout=30)
    handles = user.pool_handles("sb-pool")
    states = sorted(status(h).get("state") for h in handles)
    assert states == ["Running", "Standby", "Standby"]
    for handle in handles:
        machine = machine_of(user, handle)
        assert machine is not None
        on_standby = status(handle)["state"] == "Standby"
        assert (machine["spec"].get("running") is False) == on_standby
        if on_standby:
            wait_for(lambda m=handle: status(machine_of(user, m)).get("phase") == "Stopped", timeout=10,
                     message="a standby Machine stopped")
    row = rpool_row(stack, "sb-pool")
    assert (row["RUNNING"], row["STANDBY"]) == ("1", "2")

    # a claim binds the running handle at once; the pool resumes another to keep one running
    running = next(h["metadata"]["name"] for h in handles if status(h)["state"] == "Running")
    user.claim(ns, "instant", {"provider": {"name": "sb-machine"}})
    claim = user.wait_claim(ns, "instant", ready, timeout=10, message="Ready at once")
    assert claim["status"]["resourceHandle"]["name"] == running
    wait_counts(user, "sb-pool", running=1, standby=2, timeout=30)  # one resumed, the refill on standby

    # with no handle kept running, a claim binds a standby handle: Resuming, then Ready once its Machine runs
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcepools", "sb-pool",
                                               {"spec": {"standby": {"running": 0}}})
    wait_counts(user, "sb-pool", running=0, standby=3, timeout=20)
    user.claim(ns, "resumes", {"provider": {"name": "sb-machine"}})
    claim = user.wait_claim(ns, "resumes", lambda c: condition(c, "Ready").get("reason") == "Resuming",
                            timeout=10, message="Ready=False Resuming")
    assert condition(claim, "Ready")["status"] == "False"
    assert "is resuming from standby" in condition(claim, "Ready")["message"]
    claim = user.wait_claim(ns, "resumes", ready, timeout=15, message="Ready after resuming")
    handle = user.get_handle(claim["status"]["resourceHandle"]["name"])
    assert status(handle)["state"] == "Running"
    assert machine_of(user, handle or {})["spec"].get("running") is not False  # type: ignore[index]
    assert "Resuming" in reasons(user, ns, "resumes")

    # a handle whose Machine never boots again is replaced after resumeTimeout: the claim is served by another
    wait_counts(user, "sb-pool", running=0, standby=3, timeout=30)
    first = min(user.pool_handles("sb-pool"), key=lambda h: (h["metadata"]["creationTimestamp"],
                                                             h["metadata"]["name"]))  # the one a claim binds
    stuck = machine_of(user, first)
    assert stuck is not None
    user.custom.patch_namespaced_custom_object(standin.GROUP, standin.VERSION, ns, standin.PLURAL,
                                               stuck["metadata"]["name"],
                                               {"metadata": {"labels": {standin.STUCK_STOPPED_LABEL: "yes"}}})
    user.claim(ns, "stuck", {"provider": {"name": "sb-machine"}})
    claim = user.wait_bound(ns, "stuck")
    assert claim["status"]["resourceHandle"]["name"] == first["metadata"]["name"]
    claim = user.wait_claim(ns, "stuck", lambda c: c["status"]["resourceHandle"]["name"] != first["metadata"]["name"]
                            and ready(c), timeout=25, message="served by another handle, Ready")
    assert "ResumeTimeout" in reasons(user, ns, "stuck")
    wait_for(lambda: user.get_handle(first["metadata"]["name"]) is None, timeout=15,
             message="the stuck handle deleted")
    assert "ResumeTimeout" in reasons(user, NS, first["metadata"]["name"])
    assert user.get_claim(ns, "stuck") is not None  # the claim outlives the handle it left


def test_a_pool_without_standby_runs_every_handle_and_an_unusable_standby_says_why(
        stack: LocalStack, machines: standin.StandInController) -> None:
    user = User(stack)
    ns = user.namespace("nostandby")
    user.provider("ns-machine", machine_provider(ns, standby={"patch": {"spec": {"running": False}}}))
    user.provider("plain-machine", machine_provider(ns))
    user.pool("ns-pool", {"minAvailable": 2, "provider": {"name": "ns-machine"}})
    user.pool("bad-pool", {"minAvailable": 1, "provider": {"name": "plain-machine"}, "standby": {"running": 0}})

    def ready_handles(pool: str, count: int) -> list[dict[str, Any]]:
        return user.wait_ready_pool_handles(pool, count, resource_of=lambda h: machine_of(user, h))

    for handle in ready_handles("ns-pool", 2):
        assert "state" not in status(handle) and "standby" not in handle["spec"]
    assert not {"running", "standby"} & set(counts(user, "ns-pool"))

    bad = wait_for(lambda: (lambda p: p if condition(p, "Synced").get("reason") == "InvalidStandby" else None)(
        user.get_pool("bad-pool")), timeout=15, message="bad-pool: Synced=False InvalidStandby")
    assert condition(bad, "Synced")["status"] == "False"
    assert "no patch" in condition(bad, "Synced")["message"]
    assert "InvalidStandby" in reasons(user, NS, "bad-pool")
    handle = ready_handles("bad-pool", 1)[0]
    assert machine_of(user, handle)["spec"].get("running") is not False  # type: ignore[index]

"""An operator's day on the deployed system, under load: claims are created throughout (one a second, and bursts),
while the operator scales the workers, upgrades and rolls back the release, deletes each component's pod and a
worker hangs. At the end every claim is bound, no handle to two claims, and the pool holds exactly its
``minAvailable`` unbound handles. The figures (claims/s per worker replica count, the longest bind delay during
each operation, how long each recovery took) are printed, for helm/README.md."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from controlplane.testing import ControlPlane
from node.launcher import Node
from tests.controlplane.helm_release import Release
from tests.e2e.burst import Burst, final_violations, log_lines_naming, named_objects, wait_settled
from tests.node.conftest import wait
from tests.node.deployed import (
    ClaimFlow,
    node_values,
    pods,
    restarts,
    save_logs,
    scale,
    settle,
    warnings,
)
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.helm, pytest.mark.timeout(900)]
CLAIMS_WORKERS, HANDLES_WORKERS = "poolboy-worker-claims", "poolboy-worker-handles"
WORKER_GROUPS = (CLAIMS_WORKERS, HANDLES_WORKERS)
IMAGE = "docker.io/library/poolboy-celery:0.1.0"
REBUILT_TAG = "0.1.0-rebuilt"
BURST = 60
POOL_SIZE = 5
ROLLOUT = 240
FIGURES: dict[str, str] = {}


@pytest.fixture(scope="module")
def flow(control_plane: ControlPlane, release: Release) -> Iterator[ClaimFlow]:
    burst = Burst(client.CustomObjectsApi(control_plane.api_client()), "day", "flow", POOL_SIZE)
    burst.setup()
    claims = ClaimFlow(burst)
    claims.start()
    yield claims
    claims.stop()
    print("\noperator's day on the node:\n" + "\n".join(f"  {k}: {v}" for k, v in FIGURES.items()))


def test_scaling_the_workers_while_claims_flow(control_plane: ControlPlane, node: Node, flow: ClaimFlow) -> None:
    rates = []
    for replicas in (1, 2, 4):
        # the handles group follows up to two: four of each would not fit the 2 CPUs of a node like this one by
        # the chart's default requests (one stays Pending)
        scale(control_plane, CLAIMS_WORKERS, replicas)
        scale(control_plane, HANDLES_WORKERS, min(replicas, 2))
        settle(control_plane)
        took = flow.wait_bound(flow.claim_many(BURST), timeout=300)
        rates.append(f"{replicas}: {BURST / took:.1f}")
        print(f"\n{BURST} claims bound in {took:.1f}s with {replicas} claims worker(s)", flush=True)
    FIGURES["claims/s by claims worker replicas (handles workers: up to 2)"] = ", ".join(rates)

    # scaled down while a burst is in flight: a worker's runs are handed back on SIGTERM, none is lost
    with flow.during("scale 4 -> 1"):
        names = flow.claim_many(BURST)
        for group in WORKER_GROUPS:
            scale(control_plane, group, 1)
        flow.wait_bound(names, timeout=300)
        settle(control_plane)
    FIGURES["longest bind delay, scale 4 -> 1 under a burst"] = f"{flow.worst_delay('scale 4 -> 1'):.1f}s"

    # the chart's requests and limits held: nothing was OOM-killed or failed a liveness probe
    peaks = {}
    for pod in pods(control_plane):
        component = pod["metadata"]["name"].rsplit("-", 2)[0].removeprefix("poolboy-")
        limit = pod["spec"]["containers"][0]["resources"].get("limits", {}).get("memory", "none")
        peak = node.pod_memory_peak(pod["metadata"]["uid"]) / 2**20
        peaks[component] = max(peaks.get(component, ("", 0.0)), (limit, peak), key=lambda p: p[1])
    FIGURES["peak memory by component after the bursts (limit)"] = ", ".join(
        f"{c} {peak:.0f}Mi ({limit})" for c, (limit, peak) in sorted(peaks.items()))
    restarted = {p["metadata"]["name"]: restarts(p) for p in pods(control_plane)
                 if any(count for count, _ in restarts(p).values())}
    assert restarted == {}
    assert [w for w in warnings(control_plane, "Unhealthy") if "Liveness" in w] == []


def test_helm_upgrade_to_a_rebuilt_image_and_changed_values_then_rollback(
        control_plane: ControlPlane, node: Node, release: Release, flow: ClaimFlow) -> None:
    node.tag_image(IMAGE, f"{IMAGE.rsplit(':', 1)[0]}:{REBUILT_TAG}")
    rebuilt = node_values(node, image={"pullPolicy": "Never", "tag": REBUILT_TAG})
    steps = [
        # the workers were scaled by hand: under helm 4's server-side apply, their replicas are the scale
        # subresource's until the upgrade takes them back (helm/README.md, "Scaling by hand")
        ("upgrade to a rebuilt image", lambda: release.upgrade(rebuilt, *wait(ROLLOUT), "--force-conflicts",
                                                               timeout=ROLLOUT + 30)),
        ("upgrade to changed values", lambda: release.upgrade(
            {**rebuilt, "logLevel": "DEBUG", "workers": {"concurrency": 8}}, *wait(ROLLOUT), timeout=ROLLOUT + 30)),
        ("rollback", lambda: release.helm("rollback", release.name, "1", *wait(ROLLOUT), timeout=ROLLOUT + 30)),
    ]
    for operation, step in steps:
        with flow.during(operation):
            started = time.monotonic()
            step()
            settle(control_plane)
            took = time.monotonic() - started
        flow.wait_bound([n for n, at in flow.created.items() if flow.windows[operation][0] <= at], timeout=120)
        FIGURES[f"{operation}: rolled out in"] = f"{took:.0f}s, longest bind delay {flow.worst_delay(operation):.1f}s"
        images = {c["image"] for p in pods(control_plane) for c in p["spec"]["containers"]
                  if "redis" not in p["metadata"]["name"]}
        expected = f"poolboy-celery:{'0.1.0' if operation == 'rollback' else REBUILT_TAG}"
        assert images == {expected}, f"after {operation}: {images}"


@pytest.mark.parametrize("component", ["watcher", "worker-claims", "beat", "redis"])
def test_deleting_a_components_pod_loses_nothing(control_plane: ControlPlane, flow: ClaimFlow,
                                                 component: str) -> None:
    victim = next(p for p in pods(control_plane) if p["metadata"]["name"].startswith(f"poolboy-{component}-"))
    name = victim["metadata"]["name"]
    operation = f"delete the {component} pod"
    with flow.during(operation):
        control_plane.request("DELETE", f"/api/v1/namespaces/poolboy/pods/{name}")
        wait_for(lambda: name not in {p["metadata"]["name"] for p in pods(control_plane)}, timeout=120,
                 interval=0.2, message=f"{name} gone")
        settle(control_plane)
        ready_at = time.monotonic()
        probe = flow.claim()
        flow.wait_bound([probe], timeout=60)
    FIGURES[operation] = (f"a new claim bound {flow.bound[probe] - ready_at:.1f}s after the replacement was Ready; "
                          f"longest bind delay {flow.worst_delay(operation):.1f}s")


def test_a_hung_worker_is_restarted_by_its_liveness_probe_and_no_claim_is_lost(
        control_plane: ControlPlane, node: Node, flow: ClaimFlow) -> None:
    """The other replica serves new claims meanwhile, but for those whose message the hung worker had taken: they
    wait for a sweep to re-publish their stale mark (``POOLBOY_WORKQUEUE_STALE_SECONDS`` and the claims sweep: up to two
    minutes), or for the restart; the figure says how long the 20 took."""
    for group in WORKER_GROUPS:
        scale(control_plane, group, 2)
    settle(control_plane)
    victim = next(p for p in pods(control_plane) if p["metadata"]["name"].startswith("poolboy-worker-claims-"))
    name = victim["metadata"]["name"]
    status = victim["status"]["containerStatuses"][0]
    with flow.during("a hung claims worker"):
        stopped_at = time.monotonic()
        os.kill(node.container_pid(status["containerID"]), signal.SIGSTOP)
        names = flow.claim_many(20)
        flow.wait_bound(names, timeout=180)
        bound_by = time.monotonic() - stopped_at

        def restarted() -> bool:
            current = next((p for p in pods(control_plane) if p["metadata"]["name"] == name), None)
            return current is not None and restarts(current)[status["name"]][0] > status.get("restartCount", 0)

        wait_for(restarted, timeout=150, interval=0.5, message=f"{name} restarted by its liveness probe")
        restart = time.monotonic() - stopped_at
        settle(control_plane)
    FIGURES["a hung (SIGSTOPped) claims worker"] = (
        f"20 new claims all bound {bound_by:.1f}s after it hung; restarted {restart:.0f}s after it hung; "
        f"longest bind delay {flow.worst_delay('a hung claims worker'):.1f}s")
    assert any("Liveness" in w and name in w for w in warnings(control_plane, "Unhealthy"))


def test_every_claim_ends_bound_once_and_the_pool_exact(control_plane: ControlPlane, flow: ClaimFlow,
                                                        tmp_path: Path) -> None:
    flow.stop()
    flow.wait_bound(list(flow.created), timeout=180)
    burst = flow.burst
    # a claim is bound before its handle's resources exist: the handles workers create them just after
    try:
        wait_settled(burst, timeout=180, context="after the operator's day: ")
    except AssertionError as error:
        logs = save_logs(control_plane, tmp_path / "logs")
        raise AssertionError(f"{error}{log_lines_naming(logs, named_objects(final_violations(burst)))}") from None

    def exact() -> int | None:
        handles = burst.unbound_pool()
        ready = all((h.get("status") or {}).get("ready") is True for h in handles)
        return len(handles) if ready and len(handles) == POOL_SIZE else None

    wait_for(exact, timeout=120, interval=0.5,
             message=f"the pool at exactly {POOL_SIZE} unbound handles (now {len(burst.unbound_pool())})")
    FIGURES["claims created, all bound, no double bind"] = str(len(flow.created))

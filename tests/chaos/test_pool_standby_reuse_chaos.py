"""A pool with standby and a provider with reuse under chaos: a stream of claims created and deleted against a pool of
stand-in Machines (``tests/standin.py``) kept mostly on standby, whose released handles are wiped and returned to the
pool, while a worker is SIGKILLed (twice, restarted as a Deployment would) and redis-server is killed and restarted
empty (no persistence) in between.

Checked continuously from watches: no handle bound to two claims, no claim with two handles, and a claim gone only
once its handle is released (gone, being deleted, cleaning, or bound to no one). Checked once the stream has stopped:
every live claim Ready; every claim's handle names it back (no claim records a handle bound to another); the pool
exact as reuse defines it: at least ``minAvailable`` unbound handles and none cleaning, settled at ``standby.running``
running and the rest on standby, and no more handles in all than ``minAvailable`` plus the most claims that lived at
once (a returned handle serves the next claim instead of a new one; the pool never makes one while its unbound and
cleaning handles reach ``minAvailable``); no Machine leaked (each belongs to a live handle) and no live handle without
its Machine.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from poolboy.domain.handle_state import CLEANING, RUNNING, STANDBY, state_of
from stack.local import LocalStack
from tests import standin
from tests.chaos.test_chaos import CHAOS_ENV
from tests.chaos.test_redis_loss import restart_redis
from tests.clusters import e2e_options
from tests.e2e.burst import Burst, Watchdog, binding_violations, custom_api
from tests.e2e.conftest import FAST_INTERVALS
from tests.standin import GRANT, GROUP, PLURAL, VERSION, StandInController, install_crd
from tests.waiting import wait_for

D = "poolboy.gpte.redhat.com"
NS = "poolboy"
NAME = "chaos-sr"
MACHINES = "chaos-sr-machines"
POOL = 4
RUNNING_COUNT = 1
CLAIMS = 15
#: every third claim stays: the live claims that must end Ready; the others are deleted 1–4 s after their creation,
#: bound, resuming or not yet bound
KEPT = range(2, CLAIMS, 3)
WORKERS = 2

#: above the sum of the test's own deadlines (the stack's start, the pool at rest 30 s, the stream ~15 s, the checks
#: 4 × 30 s at most), so a failure is one of them, explained, not pytest's kill
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=WORKERS, concurrency=2, env={**FAST_INTERVALS, **CHAOS_ENV})) as running:
        running.grant(GRANT)
        yield running


class ReleasingWatchdog(Watchdog):
    """The burst's watchdog without its check that a claim's handle is gone once the claim is: reused, a released
    handle outlives its claim (cleaned and returned to its pool); the end checks that no handle stays bound to a
    claim that is gone."""

    def _check_cleanup(self, obj: dict[str, Any]) -> None:
        return


def provider(namespace: str) -> dict[str, Any]:
    return {"apiVersion": f"{D}/v1", "kind": "ResourceProvider", "metadata": {"name": NAME, "namespace": NS},
            "spec": standin.provider_spec(
                namespace, standby={"patch": standin.STANDBY_PATCH, "resumeTimeout": "30s"},
                reuse={"cleanupPatch": standin.WIPE_PATCH, "cleanedCheck": standin.WIPED_CHECK,
                       "cleanupTimeout": "30s"})}


def pool() -> dict[str, Any]:
    return {"apiVersion": f"{D}/v1", "kind": "ResourcePool", "metadata": {"name": NAME, "namespace": NS},
            "spec": {"minAvailable": POOL, "standby": {"running": RUNNING_COUNT},
                     "provider": {"name": NAME, "parameterValues": {}}}}


def pool_handles(burst: Burst) -> list[dict[str, Any]]:
    return [h for h in burst.handles() if not h["metadata"].get("deletionTimestamp")
            and (h["metadata"].get("labels") or {}).get(f"{D}/resource-pool-name") == NAME]


def waiting_handles(burst: Burst) -> list[dict[str, Any]]:
    """The pool's handles no claim holds: unbound, or cleaning on their way back."""
    return [h for h in pool_handles(burst) if not h["spec"].get("resourceClaim") or state_of(h) == CLEANING]


class Live:
    """The claims alive now and the most that lived at once: what a pool with reuse may hold above ``minAvailable``."""

    def __init__(self) -> None:
        self.now = self.peak = 0
        self._lock = threading.Lock()

    def add(self, change: int) -> None:
        with self._lock:
            self.now += change
            self.peak = max(self.peak, self.now)


def at_rest(burst: Burst) -> bool:
    """At least ``minAvailable`` unbound handles, none cleaning, ``standby.running`` of them running and the rest on
    standby."""
    states = [state_of(h) for h in waiting_handles(burst)]
    return len(states) >= POOL and states.count(RUNNING) == RUNNING_COUNT and \
        states.count(STANDBY) == len(states) - RUNNING_COUNT


def describe(handles: list[dict[str, Any]]) -> list[str]:
    """Each handle's name, state, creation and annotations, to tell a surplus handle's story."""
    return [f"{h['metadata']['name']} {state_of(h)} created {h['metadata'].get('creationTimestamp')} "
            f"{h['metadata'].get('annotations') or {}}" for h in handles]


def machines(api: client.CustomObjectsApi) -> list[dict[str, Any]]:
    return api.list_namespaced_custom_object(GROUP, VERSION, MACHINES, PLURAL)["items"]


def machine_problems(burst: Burst) -> list[str]:
    """A Machine no live handle references, or a live handle without its Machine."""
    live = [h for h in burst.handles() if not h["metadata"].get("deletionTimestamp")]
    existing = {m["metadata"]["name"] for m in machines(burst.api) if not m["metadata"].get("deletionTimestamp")}
    referenced: set[str] = set()
    problems = []
    for handle in live:
        references = [r.get("reference") or {} for r in (handle.get("status") or {}).get("resources") or []]
        names = {ref["name"] for ref in references if ref.get("name")}
        referenced |= names
        if not names or not names <= existing:
            problems.append(f"handle {handle['metadata']['name']} without its Machine")
    return problems + [f"Machine {name} leaked: no live handle" for name in sorted(existing - referenced)]


def double_binds(burst: Burst) -> list[str]:
    """A handle bound to two claims, a claim with two handles, a claim recording a handle bound to another."""
    claims, handles = burst.claims(), burst.handles()
    problems = binding_violations(claims, handles)
    by_name = {h["metadata"]["name"]: h for h in handles}
    for claim in claims:
        ref = (claim.get("status") or {}).get("resourceHandle")
        if not ref:
            continue
        bound_to = ((by_name.get(ref["name"]) or {}).get("spec") or {}).get("resourceClaim") or {}
        if bound_to.get("name") != claim["metadata"]["name"]:
            problems.append(f"claim {claim['metadata']['name']} records handle {ref['name']}, bound to {bound_to}")
    return problems


def bound_to_gone_claims(burst: Burst) -> list[str]:
    """Live handles still bound to a claim that is gone: released neither to their pool nor deleted."""
    names = {c["metadata"]["name"] for c in burst.claims()}
    return [h["metadata"]["name"] for h in burst.handles() if h["spec"].get("resourceClaim")
            and h["spec"]["resourceClaim"].get("name") not in names and not h["metadata"].get("deletionTimestamp")]


def not_ready(burst: Burst) -> list[str]:
    return [c["metadata"]["name"] for c in burst.claims()
            if not any(x.get("type") == "Ready" and x.get("status") == "True"
                       for x in (c.get("status") or {}).get("conditions") or [])]


def kill_worker(stack: LocalStack, rng: random.Random, done: list[str]) -> None:
    """SIGKILL a worker's main process and start it again, as its Deployment would."""
    name = f"worker-{rng.randrange(WORKERS)}"
    stack.restart(name, sig=signal.SIGKILL)
    done.append(f"SIGKILL {name}")


def lose_redis(stack: LocalStack, done: list[str]) -> None:
    """Kill redis-server and start it again empty a second later, as a Redis pod rescheduled without a volume."""
    restart_redis(stack, down=1.0)
    done.append("kill + restart redis-server (empty)")


def settle(condition: Callable[[], Any], show: Callable[[], Any], what: str, context: str, logs: str = "") -> None:
    """Wait up to 30 s for ``condition``; on failure say what the test did and what ``show`` finds then."""
    try:
        wait_for(condition, timeout=30, interval=0.5, message=what)
    except AssertionError as error:
        raise AssertionError(f"{context}: {error}; now: {show()}{logs}") from None


def test_standby_and_reuse_under_killed_workers_and_a_lost_redis(stack: LocalStack) -> None:
    seed = int(os.environ.get("CHAOS_SEED") or random.randrange(1 << 30))
    print(f"\nstandby-reuse chaos seed {seed} (CHAOS_SEED={seed} repeats this order)")
    rng = random.Random(seed)
    api = custom_api(stack)
    install_crd(api.api_client)
    core = client.CoreV1Api(api.api_client)
    namespace = f"{NAME}-{seed % 100000}"
    for name in (namespace, MACHINES):
        core.create_namespace({"metadata": {"name": name}})
    burst = Burst(api, namespace, NAME, POOL)
    controller = StandInController(api.api_client, boot_seconds=1.5, resume_seconds=0.5, stop_seconds=0.2,
                                   wipe_seconds=0.5)
    with controller.running():
        burst.create("resourceproviders", provider(MACHINES))
        burst.create("resourcepools", pool())
        settle(lambda: at_rest(burst), lambda: describe(pool_handles(burst)),
               f"the pool filled, {RUNNING_COUNT} handle running and the rest on standby", "before any chaos",
               f"\n{stack.logs()}")
        watchdog = ReleasingWatchdog(burst).start()

        done: list[str] = []
        live = Live()
        deletions = [threading.Timer(rng.uniform(1.0, 4.0) + 0.7 * i, delete_claim, (burst, i, live))
                     for i in range(CLAIMS) if i not in KEPT]

        def stream() -> None:
            for index in range(CLAIMS):
                live.add(1)
                claim(burst, index)
                time.sleep(0.7)

        creator = threading.Thread(target=stream, daemon=True)
        began = time.monotonic()
        creator.start()
        for timer in deletions:
            timer.start()
        for at, disrupt in ((3.0, lambda: kill_worker(stack, rng, done)), (6.0, lambda: lose_redis(stack, done)),
                            (9.5, lambda: kill_worker(stack, rng, done))):
            time.sleep(max(0.0, began + at - time.monotonic()))
            disrupt()
        creator.join(30)
        for timer in deletions:
            timer.join(30)
        calm = time.monotonic()
        context = f"seed {seed}, chaos: {done}"

        settle(lambda: len(burst.claims()) == len(KEPT) and not not_ready(burst),
               lambda: f"{len(burst.claims())} claims, not Ready: {not_ready(burst)}", "every live claim Ready",
               context, f"\n{stack.logs()}")
        ready = time.monotonic() - calm
        settle(lambda: at_rest(burst), lambda: describe(waiting_handles(burst)),
               f"the pool back at {POOL} or more unbound handles, {RUNNING_COUNT} running, the rest on standby",
               context, f"\n{stack.logs()}")
        settle(lambda: not machine_problems(burst), lambda: machine_problems(burst),
               "every Machine of a live handle, every live handle with its Machine", context)
        settle(lambda: not bound_to_gone_claims(burst), lambda: bound_to_gone_claims(burst),
               "no handle bound to a claim that is gone", context)
        rest = time.monotonic() - calm
        assert not double_binds(burst), f"{context}: {double_binds(burst)}"
        held = len(pool_handles(burst))
        assert held <= POOL + live.peak, f"{context}: {held} handles, a pool of {POOL}, at most {live.peak} claims"
        violations = watchdog.stop()
    assert not violations, f"{context}: {violations}"
    print(f"standby-reuse chaos: {'; '.join(done)}; after the stream every live claim Ready in {ready:.1f}s, the "
          f"pool at rest and no Machine leaked in {rest:.1f}s; {controller.machines_seen()} Machines for "
          f"{CLAIMS} claims and a pool of {POOL}; {watchdog.events} watch events checked")


def claim(burst: Burst, index: int) -> None:
    burst.create("resourceclaims", {
        "apiVersion": f"{D}/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"c{index:03d}", "namespace": burst.namespace},
        "spec": {"provider": {"name": NAME, "parameterValues": {}}}}, burst.namespace)


def delete_claim(burst: Burst, index: int, live: Live) -> None:
    try:
        burst.api.delete_namespaced_custom_object(D, "v1", burst.namespace, "resourceclaims", f"c{index:03d}")
    except client.ApiException as error:
        if error.status != 404:
            raise
    live.add(-1)

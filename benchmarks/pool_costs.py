"""Pools that cost less: a day of claims against one pool of Machines (``tests/standin.py``) as pools are today, with
standby, and with standby and reuse, each configuration on a fresh stack.

The Machines stand in for virtual machines: a new one is ready ``--boot-seconds`` after it is created (provisioning),
one that has run before ``--resume-seconds`` after it is asked to run again, and the stand-in's janitor wipes one in
``--wipe-seconds``. The pool keeps ``--pool`` handles unbound. The configurations:

* ``plain``: every unbound handle runs; a released handle is deleted and a new one provisioned (pools today);
* ``standby``: the pool's ``standby: {running: --running}`` and the provider's standby patch, which stops a Machine
  (``spec.running: false``); a claim bound to a stopped Machine is Ready once it has resumed;
* ``standby+reuse``: the provider's ``reuse`` too: a released handle's Machine is wiped (``spec.wipeRequest``, done
  by the stand-in's janitor) and the handle goes back to the pool instead of being deleted.

The day is the demand benchmark's (:func:`benchmarks.demand.arrivals`: its compact shape times ``--scale``, seeded, so
every configuration sees the same claims) compressed into ``--seconds``; as in the fair-share benchmark a user keeps a
claim ``--hold-seconds`` after it is Ready, then deletes it. The run goes on ``--drain-seconds`` after the day, so every
configuration is measured over the same window. Reported per configuration:

* running handle-hours: Machine-seconds starting or running (the stand-in controller's sum) over the day, the same
  scaled to a real day (× 86 400 / ``--seconds``, in hours), and over the whole window;
* handles provisioned: Machines created in the window (the pool's fill before the day is not counted);
* claim → Ready p50 / p99 (nearest rank): from a claim's creation to the first poll (every 0.25 s) that sees its
  ``Ready`` condition True, and the share Ready within a second;
* claims served: claims Ready within the window;
* the pool's unbound handles and the Machines that exist after the window (a pool left above ``--pool`` shows).

A configuration whose feature the operator does not have (the API refuses the field, the pool's handles never go on
standby, or a released handle is deleted rather than returned to the pool) is reported as not available, with why, and
is not replayed.

    .venv/bin/python -m benchmarks.pool_costs --cluster real --output pool-costs.json
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from benchmarks.claims import versions
from benchmarks.demand import DAYS, arrivals
from benchmarks.fairness import api, wait_figures
from benchmarks.systems import ProjectStack
from stack.local import StackOptions
from tests import standin
from tests.standin import GROUP, PLURAL, STANDBY_PATCH, VERSION, WIPE_PATCH, WIPED_CHECK, StandInController, install_crd

D = "poolboy.gpte.redhat.com"
NS = "poolboy"
USERS = "pool-costs"
MACHINES = "pool-costs-machines"
NAME = "machines"
POLL_S = 0.25
CONFIGURATIONS = ("plain", "standby", "standby+reuse")


class NotAvailable(Exception):
    """The operator does not have the configuration's feature: it refuses or ignores the field."""


def provider_spec(configuration: str) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if "standby" in configuration:
        extra["standby"] = {"patch": STANDBY_PATCH, "resumeTimeout": "1m"}
    if "reuse" in configuration:
        extra["reuse"] = {"cleanupPatch": WIPE_PATCH, "cleanedCheck": WIPED_CHECK, "cleanupTimeout": "1m"}
    return standin.provider_spec(MACHINES, **extra)


def pool_spec(configuration: str, args: argparse.Namespace) -> dict[str, Any]:
    spec: dict[str, Any] = {"minAvailable": args.pool, "provider": {"name": NAME, "parameterValues": {}}}
    if "standby" in configuration:
        spec["standby"] = {"running": args.running}
    return spec


def claim_body(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{D}/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": USERS, "annotations": {f"{D}/resource-pool-name": NAME}},
            "spec": {"provider": {"name": NAME, "parameterValues": {}}}}


def condition_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


@dataclass
class Cluster:
    """The benchmark's reads and writes, as the cluster's administrator."""

    custom: client.CustomObjectsApi

    def create(self, plural: str, kind: str, namespace: str, spec: dict[str, Any]) -> None:
        try:
            self.custom.create_namespaced_custom_object(D, "v1", namespace, plural, {
                "apiVersion": f"{D}/v1", "kind": kind, "metadata": {"name": NAME, "namespace": namespace},
                "spec": spec})
        except ApiException as error:
            if error.status == 422:
                raise NotAvailable(f"the API refuses the {kind}: {error.body}") from None
            raise

    def unbound_handles(self) -> list[dict[str, Any]]:
        """The pool's handles that no claim holds (released ones being cleaned too) and that are not being deleted."""
        found = self.custom.list_namespaced_custom_object(D, "v1", NS, "resourcehandles",
                                                          label_selector=f"{D}/resource-pool-name={NAME}")["items"]
        return [h for h in found if not h["spec"].get("resourceClaim") and not h["metadata"].get("deletionTimestamp")]

    def machine_phases(self) -> list[str]:
        found = self.custom.list_namespaced_custom_object(GROUP, VERSION, MACHINES, PLURAL)["items"]
        return [(m.get("status") or {}).get("phase", "") for m in found]

    def claim(self, name: str) -> dict[str, Any] | None:
        try:
            return self.custom.get_namespaced_custom_object(D, "v1", USERS, "resourceclaims", name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def handle_state(self, name: str) -> str:
        """``gone``, ``deleting``, ``bound``, or ``unbound``: where a released handle went."""
        try:
            handle = self.custom.get_namespaced_custom_object(D, "v1", NS, "resourcehandles", name)
        except ApiException as error:
            if error.status == 404:
                return "gone"
            raise
        if handle["metadata"].get("deletionTimestamp"):
            return "deleting"
        return "bound" if handle["spec"].get("resourceClaim") else "unbound"

    def delete_claim(self, name: str) -> None:
        try:
            self.custom.delete_namespaced_custom_object(D, "v1", USERS, "resourceclaims", name)
        except ApiException as error:
            if error.status != 404:
                raise


def wait(predicate: Callable[[], Any], timeout: float, what: str, show: Callable[[], Any] = lambda: "") -> Any:
    """``predicate``'s first truthy value within ``timeout`` seconds, else TimeoutError saying what ``show`` finds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(POLL_S)
    raise TimeoutError(f"{what} within {timeout:.0f} s {show()}".rstrip())


def at_rest(cluster: Cluster, configuration: str, args: argparse.Namespace, exact: bool = True) -> bool:
    """Exactly ``--pool`` unbound handles with as many Machines, all running (``plain``), or ``--running`` running
    and the rest stopped (standby); not ``exact``: at least ``--pool``, each Machine running or stopped."""
    unbound, phases = len(cluster.unbound_handles()), cluster.machine_phases()
    if not exact:
        return unbound >= args.pool and len(phases) == unbound and set(phases) <= {"Running", "Stopped"}
    running = args.running if "standby" in configuration else args.pool
    return (unbound == args.pool and len(phases) == args.pool and phases.count("Running") == running
            and phases.count("Stopped") == args.pool - running)


def settled(cluster: Cluster, configuration: str, args: argparse.Namespace, exact: bool = True,
            steady: float = 2.0) -> bool:
    """The pool at rest through ``steady`` seconds of polls, not only at one of them."""
    until = time.monotonic() + steady
    while at_rest(cluster, configuration, args, exact):
        if time.monotonic() >= until:
            return True
        time.sleep(POLL_S)
    return False


def prepare(cluster: Cluster, configuration: str, args: argparse.Namespace) -> None:
    """Provider and pool, the pool filled and at rest; for reuse, one claim served and released first, to see that
    its handle comes back. Raises :class:`NotAvailable` when the operator refuses or ignores the configuration."""
    cluster.create("resourceproviders", "ResourceProvider", NS, provider_spec(configuration))
    cluster.create("resourcepools", "ResourcePool", NS, pool_spec(configuration, args))
    patience = args.boot_seconds + args.probe_seconds
    try:
        wait(lambda: settled(cluster, configuration, args), patience, "the pool filled and at rest",
             lambda: f"({len(cluster.unbound_handles())} unbound handles; Machines {sorted(cluster.machine_phases())})")
    except TimeoutError as error:
        if "standby" in configuration and "Stopped" not in cluster.machine_phases():
            raise NotAvailable(f"no Machine of the pool went on standby within {patience:.0f} s") from None
        raise error
    if "reuse" not in configuration:
        return
    cluster.custom.create_namespaced_custom_object(D, "v1", USERS, "resourceclaims", claim_body("probe"))
    claim = wait(lambda: (c := cluster.claim("probe")) and condition_true(c, "Ready") and c, patience,
                 "the probe claim Ready")
    handle = claim["status"]["resourceHandle"]["name"]
    cluster.delete_claim("probe")
    where = wait(lambda: (s := cluster.handle_state(handle)) != "bound" and s, args.wipe_seconds + args.probe_seconds,
                 "the probe's handle released")
    if where != "unbound":
        raise NotAvailable(f"a released handle is deleted, not returned to its pool (it was {where})")
    # a returned handle may leave the pool above minAvailable, or more of it running: the day starts from what the
    # pool keeps once no Machine starts or stops (recorded: unbound handles and running Machines before the day)
    wait(lambda: settled(cluster, configuration, args, exact=False), patience, "the pool at rest again after the probe",
         lambda: f"({len(cluster.unbound_handles())} unbound handles; Machines {sorted(cluster.machine_phases())})")


@dataclass
class Ledger:
    """Each claim's creation, Ready and deletion (monotonic), and the controller's sums at the marks of the day."""

    created: dict[str, float] = field(default_factory=dict)
    ready: dict[str, float] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    running_s: dict[str, float] = field(default_factory=dict)  # "start", "day", "end"
    machines: dict[str, int] = field(default_factory=dict)
    #: the pool's unbound handles when the day starts, and after the window with the Machines that exist then (a
    #: pool left above minAvailable shows)
    unbound_before: int = 0
    running_before: int = 0
    unbound_after: int = 0
    machines_after: int = 0

    def mark(self, name: str, controller: StandInController) -> None:
        self.running_s[name] = controller.running_seconds()
        self.machines[name] = controller.machines_seen()


def replay(cluster: Cluster, controller: StandInController, args: argparse.Namespace) -> Ledger:
    offsets = arrivals(args.seconds, args.scale, args.seed, DAYS["compact"])
    ledger, lock = Ledger(), threading.Lock()
    ledger.mark("start", controller)
    ledger.unbound_before = len(cluster.unbound_handles())
    ledger.running_before = cluster.machine_phases().count("Running")
    start = time.monotonic()

    def file_claims() -> None:
        for index, offset in enumerate(offsets):
            time.sleep(max(0.0, start + offset - time.monotonic()))
            name = f"c{index:03d}"
            cluster.custom.create_namespaced_custom_object(D, "v1", USERS, "resourceclaims", claim_body(name))
            with lock:
                ledger.created[name] = time.monotonic()

    filer = threading.Thread(target=file_claims, daemon=True)
    filer.start()
    end = start + args.seconds + args.drain_seconds
    while (now := time.monotonic()) < end:
        if "day" not in ledger.running_s and now >= start + args.seconds:
            ledger.mark("day", controller)
        seen = cluster.custom.list_namespaced_custom_object(D, "v1", USERS, "resourceclaims")["items"]
        with lock:
            for item in seen:
                name = item["metadata"]["name"]
                if name in ledger.created and name not in ledger.ready and condition_true(item, "Ready"):
                    ledger.ready[name] = now
            due = [name for name, at in ledger.ready.items() if name not in ledger.deleted
                   and now - at >= args.hold_seconds]
        for name in due:
            cluster.delete_claim(name)
            ledger.deleted.add(name)
        time.sleep(max(0.0, now + POLL_S - time.monotonic()))
    ledger.mark("end", controller)
    ledger.unbound_after, ledger.machines_after = len(cluster.unbound_handles()), len(cluster.machine_phases())
    ledger.running_s.setdefault("day", ledger.running_s["end"])
    print(f"  {len(offsets)} claims filed, {len(ledger.ready)} Ready", file=sys.stderr, flush=True)
    return ledger


def summary(configuration: str, ledger: Ledger, args: argparse.Namespace) -> dict[str, Any]:
    latencies = [ledger.ready[name] - ledger.created[name] for name in ledger.ready]
    day_s = ledger.running_s["day"] - ledger.running_s["start"]
    window_s = ledger.running_s["end"] - ledger.running_s["start"]
    return {"configuration": configuration, "available": True, "claims": len(ledger.created),
            "served": len(ledger.ready),
            "running_machine_seconds_day": round(day_s, 1),
            "running_handle_hours_per_real_day": round(day_s * 86400 / args.seconds / 3600, 1),
            "running_machine_seconds_window": round(window_s, 1),
            "handles_provisioned": ledger.machines["end"] - ledger.machines["start"],
            "unbound_before": ledger.unbound_before, "running_before": ledger.running_before,
            "unbound_after": ledger.unbound_after,
            "machines_after": ledger.machines_after,
            "ready_s": wait_figures(latencies, (0.5, 0.99)),
            "ready_within_1s": round(sum(1 for v in latencies if v <= 1.0) / max(1, len(latencies)), 2)}


def run(configuration: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"{configuration}: starting the stack", file=sys.stderr, flush=True)
    options = StackOptions(cluster=args.cluster, workers=args.workers, env=dict(args.env))
    with ProjectStack(options) as stack:
        custom, core = api(stack)
        install_crd(custom.api_client)
        for name in (USERS, MACHINES):
            core.create_namespace({"metadata": {"name": name}})
        controller = StandInController(custom.api_client, boot_seconds=args.boot_seconds,
                                       resume_seconds=args.resume_seconds, stop_seconds=args.stop_seconds,
                                       wipe_seconds=args.wipe_seconds, interval=args.controller_interval)
        cluster = Cluster(custom)
        with controller.running():
            try:
                prepare(cluster, configuration, args)
            except NotAvailable as why:
                print(f"{configuration}: not available: {why}", file=sys.stderr, flush=True)
                return {"configuration": configuration, "available": False, "why": str(why)}
            print(f"{configuration}: the pool is at rest; replaying the day", file=sys.stderr, flush=True)
            return summary(configuration, replay(cluster, controller, args), args)


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| configuration | running handle-hours: day (machine-s) / per real day / window (machine-s) | "
             "handles provisioned | claim → Ready p50 / p99 | Ready within 1 s | claims served | "
             "before the day: unbound handles (running) | after: unbound handles, Machines |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if not r["available"] or r.get("failed"):
            why = f"not available: {r['why']}" if not r["available"] else f"failed: {r['failed']}"
            lines.append(f"| {r['configuration']} | {why} | | | | | | |")
            continue
        lines.append(f"| {r['configuration']} | {r['running_machine_seconds_day']} / "
                     f"{r['running_handle_hours_per_real_day']} h / {r['running_machine_seconds_window']} | "
                     f"{r['handles_provisioned']} | {r['ready_s']['p50']} / {r['ready_s']['p99']} s | "
                     f"{r['ready_within_1s']:.0%} | {r['served']} / {r['claims']} | "
                     f"{r['unbound_before']} ({r['running_before']}) | {r['unbound_after']}, {r['machines_after']} |")
    return "\n".join(lines)


#: the day's and the Machines' timings: option -> (default, help)
TIMINGS: dict[str, tuple[float, str]] = {
    "seconds": (120.0, "the compressed day"),
    "drain-seconds": (25.0, "measured after the day"),
    "scale": (1.5, "times the demand benchmark's compact day's rates"),
    "hold-seconds": (15.0, "a user keeps a claim this long after it is Ready"),
    "boot-seconds": (8.0, "a new Machine's provisioning"),
    "resume-seconds": (2.0, "a stopped Machine's start"),
    "stop-seconds": (0.5, "a Machine's stop"),
    "wipe-seconds": (1.0, "the janitor's wipe"),
    "controller-interval": (0.1, "the stand-in controller's poll"),
    "probe-seconds": (30.0, "patience for the pool at rest and for a released handle, beyond the Machines' times"),
}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", choices=("real", "devcluster"), default="real")
    parser.add_argument("--configurations", default=",".join(CONFIGURATIONS))
    for option, (default, meaning) in TIMINGS.items():
        parser.add_argument(f"--{option}", type=float, default=default, help=meaning)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--pool", type=int, default=6, help="the pool's minAvailable")
    parser.add_argument("--running", type=int, default=1, help="standby.running: unbound handles kept running")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--env", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                        help="KEY=VALUE for every component (repeatable)")
    parser.add_argument("--output")
    return parser.parse_args(argv)


def main() -> int:
    args = parse()
    unknown = set(args.configurations.split(",")) - set(CONFIGURATIONS)
    if unknown:
        raise SystemExit(f"unknown configurations {sorted(unknown)}; choose from {', '.join(CONFIGURATIONS)}")
    results = []
    for configuration in args.configurations.split(","):
        try:
            result = run(configuration, args)
        except (TimeoutError, ApiException) as error:  # one configuration that fails does not lose the others
            result = {"configuration": configuration, "available": True, "failed": str(error)}
        print(json.dumps(result), file=sys.stderr, flush=True)
        results.append(result)
    document = {"date": time.strftime("%Y-%m-%d"), "cluster": args.cluster, "versions": versions(),
                "args": {k: v for k, v in vars(args).items() if k != "env"} | {"env": dict(args.env)},
                "runs": results}
    if args.output:
        with open(args.output, "w") as out:
            json.dump(document, out, indent=1)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

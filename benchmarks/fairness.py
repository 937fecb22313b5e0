"""Fair sharing of a pool smaller than demand: a day of claims from namespaces of unequal appetite, under FIFO and
under fair share (``spec.queue.order``), replayed through the running stack.

The day (compressed to ``--seconds``, seeded so every policy sees the same arrivals): one heavy namespace files
``--heavy-bursts`` bursts of ``--heavy-burst`` claims (a class setting up its labs at once), and ``--light`` light
namespaces file ``--light-claims`` claims each at random times. Claims may not create handles (the provider's
``disableCreation``); the pool makes one handle every ``--supply-interval`` seconds (a ResourcePoolScaling of one, the
platform's provisioning capacity), so claims queue. A user keeps a handle ``--hold-seconds`` after it is bound, then
deletes the claim. Reported per policy:

* wait (creation → bound, seen by polling every 0.25 s) p50 / p95 of the light namespaces' claims and of the heavy
  one's;
* Jain's fairness index over namespaces of each one's handle-seconds divided by its max-min fair share
  (:func:`fair_shares`): sampled at every poll while a claim waits, the handles in use are shared out by
  water-filling over the namespaces' demands (held + waiting), so a namespace that asks for less than an equal share
  gets all it asks for and the rest is split evenly; 1 is max-min fair, 1/N one namespace served alone;
* the operator's CPU per claim and bind latency, so the policy is seen not to cost the burst path.

    .venv/bin/python -m benchmarks.fairness --cluster real --policies FIFO,FairShare --output fairness.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException

from benchmarks import procstats
from benchmarks.systems import ProjectStack
from stack.local import StackOptions

D = "poolboy.gpte.redhat.com"
NS = "poolboy"
HEAVY = "fair-heavy"
POLL_S = 0.25


@dataclass(frozen=True)
class Arrival:
    at: float  # seconds into the day
    namespace: str
    name: str


def day(args: argparse.Namespace) -> list[Arrival]:
    """The day's claims in arrival order: the heavy namespace's bursts at even fractions of the day, the light
    namespaces' claims uniformly at random (seeded)."""
    rng = random.Random(args.seed)
    arrivals = []
    for burst in range(args.heavy_bursts):
        at = args.seconds * (burst + 0.5) / (args.heavy_bursts + 1)
        arrivals += [Arrival(at + i * 0.05, HEAVY, f"h{burst}-{i:02d}") for i in range(args.heavy_burst)]
    for light in range(args.light):
        arrivals += [Arrival(rng.uniform(0, args.seconds), light_namespace(light), f"l{light}-{i}")
                     for i in range(args.light_claims)]
    return sorted(arrivals, key=lambda a: a.at)


def light_namespace(index: int) -> str:
    return f"fair-light-{index}"


def jain_index(values: Iterable[float]) -> float:
    """Jain's fairness index: ``(Σx)² / (n Σx²)``, 1 when all are equal, 1/n when one holds everything."""
    items = list(values)
    squares = sum(v * v for v in items)
    return sum(items) ** 2 / (len(items) * squares) if items and squares else 1.0


def fair_shares(capacity: float, demands: Mapping[str, float]) -> dict[str, float]:
    """Max-min fair shares of ``capacity`` (water-filling): the smallest demands are met in full, the rest is split
    evenly among the others."""
    shares: dict[str, float] = {}
    left, todo = capacity, sorted(demands, key=lambda n: demands[n])
    while todo:
        even = left / len(todo)
        name = todo[0]
        if demands[name] <= even:
            shares[name] = demands[name]
            left -= demands[name]
            todo.pop(0)
        else:
            shares.update(dict.fromkeys(todo, even))
            break
    return shares


@dataclass
class Ledger:
    """What the driver saw: each claim's creation, bind and deletion (monotonic), and the fairness sums."""

    created: dict[tuple[str, str], float] = field(default_factory=dict)
    bound: dict[tuple[str, str], float] = field(default_factory=dict)
    deleted: set[tuple[str, str]] = field(default_factory=set)
    held: Counter[str] = field(default_factory=Counter)  # handle-seconds per namespace while claims waited
    fair: Counter[str] = field(default_factory=Counter)  # max-min fair handle-seconds over the same samples

    def sample(self, seconds: float) -> None:
        """One poll's worth of handle-seconds: what each namespace held and its fair share, when a claim waits."""
        holding: Counter[str] = Counter()
        waiting: Counter[str] = Counter()
        for key in self.created:
            if key in self.deleted:
                continue
            (holding if key in self.bound else waiting)[key[0]] += 1
        if not waiting:
            return
        demands = {ns: float(holding[ns] + waiting[ns]) for ns in set(holding) | set(waiting)}
        for ns, share in fair_shares(float(sum(holding.values())), demands).items():
            self.fair[ns] += share * seconds
            self.held[ns] += holding[ns] * seconds


def api(stack: ProjectStack) -> tuple[client.CustomObjectsApi, client.CoreV1Api]:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
    api_client = client.ApiClient(configuration)
    return client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)


def setup(custom: client.CustomObjectsApi, core: client.CoreV1Api, policy: str, namespaces: list[str]) -> None:
    for name in [*namespaces, "fair-cms"]:
        core.create_namespace({"metadata": {"name": name}})
    custom.create_namespaced_custom_object(D, "v1", NS, "resourceproviders", {
        "apiVersion": f"{D}/v1", "kind": "ResourceProvider", "metadata": {"name": "lab", "namespace": NS},
        "spec": {"disableCreation": True, "override": {"metadata": {"name": "cm-{{ guid }}"}},
                 "template": {"enable": True, "definition": {"apiVersion": "v1", "kind": "ConfigMap",
                                                             "metadata": {"namespace": "fair-cms"}}}}})
    custom.create_namespaced_custom_object(D, "v1", NS, "resourcepools", {
        "apiVersion": f"{D}/v1", "kind": "ResourcePool", "metadata": {"name": "labs", "namespace": NS},
        "spec": {"minAvailable": 0, "provider": {"name": "lab", "parameterValues": {}}, "queue": {"order": policy}}})


def claim_body(arrival: Arrival) -> dict[str, Any]:
    return {"apiVersion": f"{D}/v1", "kind": "ResourceClaim",
            "metadata": {"name": arrival.name, "namespace": arrival.namespace,
                         "annotations": {f"{D}/resource-pool-name": "labs"}},
            "spec": {"provider": {"name": "lab", "parameterValues": {}}}}


def replay(stack: ProjectStack, args: argparse.Namespace, policy: str) -> dict[str, Any]:
    custom, core = api(stack)
    arrivals = day(args)
    namespaces = [HEAVY, *(light_namespace(i) for i in range(args.light))]
    setup(custom, core, policy, namespaces)
    ledger, lock, stop = Ledger(), threading.Lock(), threading.Event()
    pids = stack.pids()
    cpu_before = procstats.snapshot(pids)
    start = time.monotonic()

    def file_claims() -> None:
        for arrival in arrivals:
            time.sleep(max(0.0, start + arrival.at - time.monotonic()))
            custom.create_namespaced_custom_object(D, "v1", arrival.namespace, "resourceclaims", claim_body(arrival))
            with lock:
                ledger.created[(arrival.namespace, arrival.name)] = time.monotonic()

    def supply() -> None:
        made = 0
        while not stop.wait(args.supply_interval):
            made += 1
            custom.create_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", {
                "apiVersion": f"{D}/v1", "kind": "ResourcePoolScaling",
                "metadata": {"name": f"supply-{made:04d}", "namespace": NS},
                "spec": {"resourcePool": {"name": "labs"}, "count": 1}})

    threads = [threading.Thread(target=file_claims, daemon=True), threading.Thread(target=supply, daemon=True)]
    for thread in threads:
        thread.start()
    deadline = start + args.seconds + args.drain_seconds
    last = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        now = time.monotonic()
        seen = custom.list_cluster_custom_object(D, "v1", "resourceclaims")["items"]
        with lock:
            for item in seen:
                key = (item["metadata"]["namespace"], item["metadata"]["name"])
                if key in ledger.created and key not in ledger.bound and (item.get("status") or {}).get(
                        "resourceHandle"):
                    ledger.bound[key] = now
            for key, bound_at in ledger.bound.items():
                if key not in ledger.deleted and now - bound_at >= args.hold_seconds:
                    try:
                        custom.delete_namespaced_custom_object(D, "v1", key[0], "resourceclaims", key[1])
                    except ApiException as error:
                        if error.status != 404:
                            raise
                    ledger.deleted.add(key)
            ledger.sample(now - last)
            finished = len(ledger.created) == len(arrivals) and len(ledger.bound) == len(arrivals)
        last = now
        if finished:
            break
    stop.set()
    cpu = procstats.report(pids, cpu_before)
    return summary(ledger, arrivals, policy, procstats.operator_sum(cpu, "cpu_s"), time.monotonic() - start)


def wait_figures(values: list[float], quantiles: tuple[float, ...] = (0.5, 0.95)) -> dict[str, float | None]:
    """The ``quantiles`` (nearest rank; p50 and p95 by default) and the longest wait, in seconds."""
    ordered = sorted(values)
    names = [f"p{round(100 * q)}" for q in quantiles]
    if not ordered:
        return {**dict.fromkeys(names), "max": None}

    def rank(q: float) -> float:
        return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 2)

    return {**{name: rank(q) for name, q in zip(names, quantiles, strict=True)}, "max": round(ordered[-1], 2)}


def summary(ledger: Ledger, arrivals: list[Arrival], policy: str, cpu_s: float, seconds: float) -> dict[str, Any]:
    waits: dict[str, list[float]] = {"light": [], "heavy": []}
    for key, bound_at in ledger.bound.items():
        waits["heavy" if key[0] == HEAVY else "light"].append(bound_at - ledger.created[key])
    ratios = {ns: ledger.held[ns] / ledger.fair[ns] for ns in ledger.fair if ledger.fair[ns] > 0}
    return {"policy": policy, "claims": len(arrivals), "bound": len(ledger.bound), "seconds": round(seconds, 1),
            "wait_s": {group: wait_figures(values) for group, values in waits.items()},
            "jain": round(jain_index(ratios.values()), 3),
            "held_over_fair": {ns: round(r, 3) for ns, r in sorted(ratios.items())},
            "operator_cpu_ms_per_claim": round(1000 * cpu_s / max(1, len(ledger.bound)), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", choices=("real", "devcluster"), default="real")
    parser.add_argument("--policies", default="FIFO,FairShare")
    parser.add_argument("--repeats", type=int, default=1, help="runs per policy, interleaved")
    parser.add_argument("--seconds", type=float, default=240.0, help="the compressed day")
    parser.add_argument("--drain-seconds", type=float, default=240.0, help="after the day, until all are bound")
    parser.add_argument("--heavy-bursts", type=int, default=2)
    parser.add_argument("--heavy-burst", type=int, default=30)
    parser.add_argument("--light", type=int, default=8)
    parser.add_argument("--light-claims", type=int, default=3)
    parser.add_argument("--supply-interval", type=float, default=2.5)
    parser.add_argument("--hold-seconds", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output")
    args = parser.parse_args()
    runs = []
    for repeat in range(args.repeats):
        for policy in args.policies.split(","):
            options = StackOptions(cluster=args.cluster, workers=args.workers,
                                   env={"POOLBOY_QUEUE_STATUS_INTERVAL": "5"})
            with ProjectStack(options) as stack:
                result = replay(stack, args, policy)
            result["repeat"] = repeat
            print(json.dumps(result), file=sys.stderr, flush=True)
            runs.append(result)
    document = {"date": time.strftime("%Y-%m-%d"), "cluster": args.cluster, "args": vars(args), "runs": runs}
    if args.output:
        with open(args.output, "w") as out:
            json.dump(document, out, indent=1)
    print(json.dumps(document, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

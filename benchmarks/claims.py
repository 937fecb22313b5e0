"""Claim benchmarks W1–W5 on the whole local stack (devcluster, Redis, watcher, N workers, beat).

Prints one JSON document (and a human summary on stderr). Workloads, kept identical across runs:

* the managed resource is a namespaced custom resource (``BenchItem``) whose CRD is created at runtime;
* a provider with ``template.enable``, an OpenAPI schema requiring a string ``spec.value`` and an override
  naming the resource ``<provider>-{{ guid }}``;
* claims in their own namespace with ``resources[0] = {provider: {name}, template: {spec: {value: foo}}}``.

W1 warm burst (pool of N, then N claims), W2 cold burst (no pool), W3 steady rate against a pool of 20,
W4 = W1 with 1, 2 and 4 worker processes, W5 scale-out (many handles and claims; memory, resync, restart).

    python benchmarks/claims.py --workloads W1,W2,W3 --n 300 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
from kubernetes import client, config, watch

from stack.local import LocalStack, StackOptions

D = "poolboy.gpte.redhat.com"
OPERATOR_NS = "poolboy"
CLAIM_NS = "bench"
PROVIDER = "bench"
ITEM_GROUP = "bench.example.com"


# --- workload objects ------------------------------------------------------------------------------------------

def item_crd() -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"benchitems.{ITEM_GROUP}"},
        "spec": {
            "group": ITEM_GROUP, "scope": "Namespaced",
            "names": {"plural": "benchitems", "singular": "benchitem", "kind": "BenchItem"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }


def provider() -> dict:
    return {
        "apiVersion": f"{D}/v1", "kind": "ResourceProvider",
        "metadata": {"name": PROVIDER, "namespace": OPERATOR_NS},
        "spec": {
            "match": {"apiVersion": f"{ITEM_GROUP}/v1", "kind": "BenchItem"},
            "template": {"enable": True},
            "default": {"apiVersion": f"{ITEM_GROUP}/v1", "kind": "BenchItem",
                        "metadata": {"namespace": CLAIM_NS}},
            "validation": {"openAPIV3Schema": {
                "type": "object", "required": ["spec"],
                "properties": {"spec": {"type": "object", "required": ["value"],
                                        "properties": {"value": {"type": "string"}}}}}},
            "override": {"metadata": {"name": PROVIDER + "-{{ guid }}"}},
            "healthCheck": "true", "readinessCheck": "true",
        },
    }


def claim_template() -> dict:
    return {"apiVersion": f"{ITEM_GROUP}/v1", "kind": "BenchItem", "metadata": {"namespace": CLAIM_NS},
            "spec": {"value": "foo"}}


def pool(n: int) -> dict:
    return {
        "apiVersion": f"{D}/v1", "kind": "ResourcePool", "metadata": {"name": PROVIDER, "namespace": OPERATOR_NS},
        "spec": {"minAvailable": n, "resources": [{
            "provider": {"apiVersion": f"{D}/v1", "kind": "ResourceProvider", "name": PROVIDER,
                         "namespace": OPERATOR_NS},
            "template": claim_template()}]},
    }


def claim(name: str) -> dict:
    return {"apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": CLAIM_NS},
            "spec": {"resources": [{"provider": {"name": PROVIDER}, "template": claim_template()}]}}


# --- measurement -------------------------------------------------------------------------------------------------

@dataclass
class ClaimClock:
    """create→bound and create→state per claim, observed from one watch on claims."""

    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    state: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, obj: dict) -> None:
        name, status, now = obj["metadata"]["name"], obj.get("status") or {}, time.monotonic()
        with self.lock:
            if status.get("resourceHandle") and name not in self.bound:
                self.bound[name] = now
            resources = status.get("resources") or []
            if resources and resources[0].get("state") and name not in self.state:
                self.state[name] = now


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)

    return {"p50": pick(0.50), "p90": pick(0.90), "p99": pick(0.99), "max": round(ordered[-1], 4)}


class Bench:
    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
        configuration.connection_pool_maxsize = 16
        self.api_client = client.ApiClient(configuration)
        self.custom = client.CustomObjectsApi(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self.ext = client.ApiextensionsV1Api(self.api_client)

    def setup(self) -> None:
        with suppress(client.ApiException):
            self.ext.create_custom_resource_definition(item_crd())
        with suppress(client.ApiException):
            self.core.create_namespace({"metadata": {"name": CLAIM_NS}})
        self.custom.create_namespaced_custom_object(D, "v1", OPERATOR_NS, "resourceproviders", provider())

    def list_items(self, plural: str, namespace: str) -> list[dict]:
        return self.custom.list_namespaced_custom_object(D, "v1", namespace, plural)["items"]

    def wait(self, condition: Any, timeout: float, what: str, interval: float = 0.2) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if condition():
                return time.monotonic() - start
            time.sleep(interval)
        raise TimeoutError(f"timed out waiting for {what}")

    def wait_pool_ready(self, n: int) -> float:
        def ready() -> bool:
            handles = [h for h in self.list_items("resourcehandles", OPERATOR_NS) if not h["spec"].get("resourceClaim")]
            with_resources = [h for h in handles if any(r.get("reference") for r in
                                                        (h.get("status") or {}).get("resources") or [])]
            return len(with_resources) >= n
        took = self.wait(ready, 600, f"{n} pool handles with resources", interval=0.5)
        self.wait_idle()
        return took

    def wait_idle(self, quiet: float = 2.0) -> None:
        """Idle = no API write for ``quiet`` seconds (devcluster counters are the witness)."""
        last, since = None, time.monotonic()
        while time.monotonic() - since < quiet:
            writes = self.write_count()
            if writes != last:
                last, since = writes, time.monotonic()
            time.sleep(0.25)

    def counters(self) -> dict:
        return self.stack.cluster.request("GET", "/_devcluster/counters") if self.stack.cluster else {}

    def write_count(self) -> int:
        totals = self.counters().get("by_verb", {})
        return sum(v for k, v in totals.items() if k in ("create", "update", "patch", "delete"))

    def reset_counters(self) -> None:
        if self.stack.cluster:
            self.stack.cluster.request("POST", "/_devcluster/counters/reset")

    def run_claims(self, names: list[str], rate: float | None, clock: ClaimClock, timeout: float) -> float:
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch_claims, args=(clock, stop), daemon=True)
        watcher.start()
        time.sleep(0.3)  # the watch connects; a bookmark-free start is fine, the list covers the rest
        start = time.monotonic()
        for index, name in enumerate(names):
            if rate:
                target = start + index / rate
                delay = target - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            clock.created[name] = time.monotonic()
            self.custom.create_namespaced_custom_object(D, "v1", CLAIM_NS, "resourceclaims", claim(name))
        try:
            self.wait(lambda: len(clock.bound) >= len(names) and len(clock.state) >= len(names), timeout,
                      "all claims bound with state", interval=0.05)
        finally:
            stop.set()
        return max(clock.bound.values()) - start

    def _watch_claims(self, clock: ClaimClock, stop: threading.Event) -> None:
        while not stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(self.custom.list_namespaced_custom_object, D, "v1", CLAIM_NS,
                                           "resourceclaims", timeout_seconds=5):
                    clock.observe(event["object"])
                    if stop.is_set():
                        break
            except Exception:
                time.sleep(0.1)
            finally:
                stream.stop()

    def api_per_claim(self, n: int) -> dict[str, float]:
        by_verb = self.counters().get("by_verb", {})
        return {verb: round(count / n, 2) for verb, count in sorted(by_verb.items()) if count}

    def resources(self) -> dict[str, dict[str, float]]:
        """CPU seconds and peak RSS (MiB) per component, over its whole process tree."""
        report = {}
        for child in self.stack.children:
            if not child.process:
                continue
            with suppress(psutil.NoSuchProcess):
                root = psutil.Process(child.process.pid)
                procs = [root, *root.children(recursive=True)]
                cpu = sum(p.cpu_times().user + p.cpu_times().system for p in procs)
                rss = sum(p.memory_info().rss for p in procs) / 2**20
                report[child.name] = {"cpu_s": round(cpu, 2), "rss_mib": round(rss, 1)}
        return report


def summarise(clock: ClaimClock, n: int) -> dict[str, Any]:
    bound = [clock.bound[k] - clock.created[k] for k in clock.created if k in clock.bound]
    state = [clock.state[k] - clock.created[k] for k in clock.created if k in clock.state]
    return {"n": n, "create_to_bound": percentiles(bound), "create_to_state": percentiles(state)}


def run_burst(workers: int, n: int, warm: bool) -> dict[str, Any]:
    with LocalStack(StackOptions(workers=workers, concurrency=1)) as stack:
        bench = Bench(stack)
        bench.setup()
        result: dict[str, Any] = {"workers": workers}
        if warm:
            bench.custom.create_namespaced_custom_object(D, "v1", OPERATOR_NS, "resourcepools", pool(n))
            result["pool_fill_s"] = round(bench.wait_pool_ready(n), 2)
        bench.reset_counters()
        clock = ClaimClock()
        result["all_bound_s"] = round(bench.run_claims([f"c{i:05d}" for i in range(n)], None, clock, 600), 3)
        result["all_state_s"] = round(max(clock.state.values()) - min(clock.created.values()), 3)
        result.update(summarise(clock, n))
        bench.wait_idle()
        result["api_requests_per_claim"] = bench.api_per_claim(n)
        result["components"] = bench.resources()
        return result


def run_steady(workers: int, rate: float, seconds: float) -> dict[str, Any]:
    with LocalStack(StackOptions(workers=workers, concurrency=1)) as stack:
        bench = Bench(stack)
        bench.setup()
        bench.custom.create_namespaced_custom_object(D, "v1", OPERATOR_NS, "resourcepools", pool(20))
        bench.wait_pool_ready(20)
        bench.reset_counters()
        n = int(rate * seconds)
        empty_seen = threading.Event()
        stop = threading.Event()

        def monitor_pool() -> None:
            while not stop.is_set():
                status = bench.custom.get_namespaced_custom_object(
                    D, "v1", OPERATOR_NS, "resourcepools", PROVIDER).get("status") or {}
                if (status.get("resourceHandleCount") or {}).get("available", 1) == 0:
                    empty_seen.set()
                time.sleep(0.2)

        threading.Thread(target=monitor_pool, daemon=True).start()
        clock = ClaimClock()
        bench.run_claims([f"s{i:05d}" for i in range(n)], rate, clock, seconds + 300)
        stop.set()
        result = {"workers": workers, "rate": rate, "seconds": seconds, "pool_ever_empty": empty_seen.is_set()}
        result.update(summarise(clock, n))
        bench.wait_idle()
        result["api_requests_per_claim"] = bench.api_per_claim(n)
        result["components"] = bench.resources()
        return result


def run_scale_out(workers: int, n: int) -> dict[str, Any]:
    with LocalStack(StackOptions(workers=workers, concurrency=2)) as stack:
        bench = Bench(stack)
        bench.setup()
        clock = ClaimClock()
        result: dict[str, Any] = {"workers": workers, "n": n}
        result["all_bound_s"] = round(bench.run_claims([f"x{i:05d}" for i in range(n)], None, clock, 3600), 2)
        bench.wait_idle()
        result["components"] = bench.resources()
        import redis

        result["redis_used_memory_mib"] = round(
            redis.Redis.from_url(stack.redis_url).info("memory")["used_memory"] / 2**20, 1)
        started = time.monotonic()
        for child in stack.children:
            child.stop()
        stack.children.clear()
        stack._start_components()
        stack._wait_ready()
        bench.reset_counters()
        bench.wait_idle(quiet=3.0)
        result["converge_after_restart_s"] = round(time.monotonic() - started, 2)
        result["api_requests_after_restart"] = bench.counters().get("by_verb", {})
        return result


def median_min(runs: list[dict[str, Any]], path: tuple[str, ...]) -> dict[str, float | None]:
    values = []
    for run in runs:
        value: Any = run
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, (int, float)):
            values.append(value)
    return {"median": statistics.median(values) if values else None, "min": min(values) if values else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="W1,W2,W3,W4", help="comma list of W1..W5")
    parser.add_argument("--n", type=int, default=300, help="claims per burst (W1, W2, W4)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for W1–W3")
    parser.add_argument("--rate", type=float, default=5.0, help="W3 claims per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="W3 duration")
    parser.add_argument("--scale-n", type=int, default=10000, help="W5 claims")
    parser.add_argument("--repeat", type=int, default=1, help="runs per workload (report median and min)")
    args = parser.parse_args()

    chosen = [w.strip().upper() for w in args.workloads.split(",") if w.strip()]
    report: dict[str, Any] = {"machine": {"cpus": psutil.cpu_count(), "mem_gib": round(
        psutil.virtual_memory().total / 2**30, 1)}, "date": time.strftime("%Y-%m-%d"), "workloads": {}}
    plans = {
        "W1": lambda: run_burst(args.workers, args.n, warm=True),
        "W2": lambda: run_burst(args.workers, args.n, warm=False),
        "W3": lambda: run_steady(args.workers, args.rate, args.seconds),
        "W5": lambda: run_scale_out(args.workers, args.scale_n),
    }
    for name in chosen:
        if name == "W4":
            report["workloads"]["W4"] = {
                str(w): [run_burst(w, args.n, warm=True) for _ in range(args.repeat)] for w in (1, 2, 4)}
            continue
        runs = [plans[name]() for _ in range(args.repeat)]
        report["workloads"][name] = {"runs": runs, "all_bound_s": median_min(runs, ("all_bound_s",)),
                                     "p99_bound_s": median_min(runs, ("create_to_bound", "p99"))}
        print(f"{name}: {json.dumps(report['workloads'][name]['all_bound_s'])}", file=sys.stderr)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

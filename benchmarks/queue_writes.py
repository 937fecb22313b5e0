"""API writes per bind while many claims wait in one queue (issue 20, "a visible queue").

Starts the stack (``stack.local.LocalStack``), makes N claims wait for a provider with ``disableCreation`` (a pool
of ``minAvailable: 0``), waits until every one shows its position (``status.queue``), resets devcluster's request
counters, then binds K of them with a ResourcePoolScaling of K handles (or ``--steps`` scalings, each once the last
one's handles are bound: a pool that refills a few at a time) and waits until every remaining claim shows
its new position (1..N-K). It prints one JSON document: the claim writes (``update`` + ``patch`` of
resourceclaims in the claims' namespace, all the operator's: the benchmark writes none) in total, per bind, the
claim reconcile runs meanwhile (the workers' ``controller_runtime_reconcile_total``), and the seconds until positions
were current again. The refresh interval is ``POOLBOY_QUEUE_STATUS_INTERVAL`` (default
30 s): each waiting claim is rewritten at most once per interval and only when its position changed, so the total
is bounded by about ``N-K`` (one rewrite each) plus the binds' own writes, whatever K.

    .venv/bin/python benchmarks/queue_writes.py --claims 500 --binds 50
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client, config

from benchmarks import operator_metrics
from stack.local import LocalStack, StackOptions

D = "poolboy.gpte.redhat.com"
NS = "poolboy"
USER_NS = "queue"


def api_of(stack: LocalStack) -> client.CustomObjectsApi:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = 16
    return client.CustomObjectsApi(client.ApiClient(configuration))


def create(api: client.CustomObjectsApi, namespace: str, plural: str, kind: str, name: str, spec: dict) -> None:
    api.create_namespaced_custom_object(D, "v1", namespace, plural, {
        "apiVersion": f"{D}/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def positions(api: client.CustomObjectsApi) -> dict[str, int | None]:
    items = api.list_namespaced_custom_object(D, "v1", USER_NS, "resourceclaims")["items"]
    return {c["metadata"]["name"]: ((c.get("status") or {}).get("queue") or {}).get("position")
            for c in items if not (c.get("status") or {}).get("resourceHandle")}


def wait(predicate, timeout: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(1)
    raise SystemExit(f"timed out after {timeout}s waiting for {what}")


def claim_writes(stack: LocalStack) -> int:
    items = stack.cluster.counters().get("items", [])
    return sum(i["count"] for i in items if i["verb"] in ("update", "patch") and i["namespace"] == USER_NS
               and i["resource"].startswith("resourceclaims"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--claims", type=int, default=500)
    parser.add_argument("--binds", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=1,
                        help="add the handles in this many scalings, each once the last one's are bound (a pool "
                             "that refills a few at a time)")
    args = parser.parse_args()
    with LocalStack(StackOptions(workers=args.workers, concurrency=1,
                                 metrics_port=operator_metrics.free_port_run(args.workers + 1))) as stack:
        api = api_of(stack)
        client.CoreV1Api(api.api_client).create_namespace({"metadata": {"name": USER_NS}})
        create(api, NS, "resourceproviders", "ResourceProvider", "q", {
            "disableCreation": True,
            "template": {"enable": True, "definition": {"apiVersion": "v1", "kind": "ConfigMap",
                                                        "metadata": {"namespace": USER_NS}, "data": {"v": "x"}}},
            "override": {"metadata": {"name": "q-{{ guid }}"}}})
        create(api, NS, "resourcepools", "ResourcePool", "q", {"minAvailable": 0, "provider": {"name": "q"}})
        names = [f"c{index:04d}" for index in range(args.claims)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: create(api, USER_NS, "resourceclaims", "ResourceClaim", n,
                                           {"provider": {"name": "q"}}), names))
        settle = wait(lambda: all(p is not None for p in positions(api).values()) and len(positions(api)) == len(names),
                      900, "every claim showing its position")
        stack.cluster.reset_counters()
        runs_before = operator_metrics.claim_runs(stack.metrics_urls)
        bound = 0.0
        for step in range(args.steps):  # each scaling once the previous one's handles are bound
            count = args.binds * (step + 1) // args.steps - args.binds * step // args.steps
            create(api, NS, "resourcepoolscalings", "ResourcePoolScaling", f"more-{step}", {
                "resourcePool": {"name": "q"}, "count": count})
            remaining = args.claims - args.binds * (step + 1) // args.steps
            bound += wait(lambda left=remaining: len(positions(api)) == left, 600, f"{args.binds} binds")
        current = wait(lambda: sorted(p for p in positions(api).values() if p) == list(range(1, remaining + 1)),
                       600, "positions current again")
        writes = claim_writes(stack)
        runs = operator_metrics.claim_runs(stack.metrics_urls) - runs_before
        result = {"claims": args.claims, "binds": args.binds, "steps": args.steps, "workers": args.workers,
                  "seconds_until_every_position_shown": round(settle, 1), "seconds_to_bind": round(bound, 1),
                  "seconds_until_positions_current": round(bound + current, 1), "claim_writes": writes,
                  "claim_writes_per_bind": round(writes / args.binds, 2),
                  "claim_writes_per_waiting_claim": round(writes / remaining, 2),
                  "claim_runs": runs, "claim_runs_per_bind": round(runs / args.binds, 2)}
        json.dump(result, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()

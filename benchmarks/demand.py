"""Demand benchmark (issue 20): replay a claim arrival trace through the real stack for several pool sizings.

A compressed day — a quiet night, a morning ramp, a burst, an afternoon — is a piecewise-constant Poisson arrival
rate (seeded, so every sizing sees the same arrivals). For each sizing (static ``minAvailable`` values and
``autoscaling``) the script starts a fresh stack (``stack.local.LocalStack``), creates a provider whose ConfigMaps
count as ready only ``--ready-seconds`` after they were created (a time-based ``readinessCheck``; the handle sweep
re-checks it every 2 s here, standing in for a controller that marks resources ready after a delay) and a pool,
waits for the pool to fill, replays the trace, and reports:

* warm-hit ratio: claims whose handle was ready when they were bound (their wait, creation to ``Ready``, at most
  ``--warm-seconds``);
* claim wait p50 / p99: creation to the claim's ``Ready`` condition (whole seconds, as the API stores them);
* idle handle-seconds: unbound pool handles integrated over the replay (sampled every second from the pool's
  ``status.resourceHandleCount.available``).

It prints a table and one JSON document, and writes a PNG when matplotlib is installed (``--plot``). Figures depend
on the machine's load: compare sizings from one invocation, on a quiet machine.

    .venv/bin/python benchmarks/demand.py --seconds 150 --static 2,5 --autoscaling --plot demand.png

With ``--period`` the autoscaled pool learns the day (``spec.autoscaling.period``): it replays ``--learn-days`` days
of the same shape (other draws) before the measured day, and only the measured day is reported, as for the static
sizes, which replay that day alone.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from kubernetes import client, config

from stack.local import LocalStack, StackOptions

D = "poolboy.gpte.redhat.com"
NS = "poolboy"
USER_NS = "demand"
Day = tuple[tuple[float, float, float], ...]
#: day shapes, each a sequence of (share of the day, claims per second at its start, at its end)
DAYS: dict[str, Day] = {
    # every demand run before round 16: night, morning ramp, burst, afternoon; a 6-hour night and a burst of 2.4
    # hours that brings a third of the day's claims
    "compact": ((0.25, 0.02, 0.02), (0.35, 0.02, 0.3), (0.1, 0.8, 0.8), (0.3, 0.15, 0.15)),
    # a working day's proportions: an 8.4-hour night, a 2.4-hour ramp, a 1.2-hour burst (a class starting),
    # an afternoon, an evening that quiets down
    "workday": ((0.35, 0.02, 0.02), (0.1, 0.02, 0.3), (0.05, 0.8, 0.8), (0.3, 0.15, 0.15), (0.2, 0.05, 0.02)),
}
DAY = DAYS["compact"]


def arrivals(seconds: float, scale: float, seed: int, day: Day = DAY) -> list[float]:
    """Arrival offsets (s) of a non-homogeneous Poisson process over the compressed day (thinning)."""
    rng = random.Random(seed)
    peak = max(max(a, b) for _, a, b in day) * scale
    result, t = [], 0.0
    while True:
        t += rng.expovariate(peak)
        if t >= seconds:
            return result
        if rng.random() * peak <= rate_at(t / seconds, day) * scale:
            result.append(t)


def days_of_arrivals(seconds: float, scale: float, seed: int, day: Day, days: int) -> list[float]:
    """``days`` consecutive days of the same shape, each its own draw (seeds ``seed``, ``seed + 1000``, …), the last
    one the day measured: offsets from the first day's start."""
    return [index * seconds + t for index in range(days)
            for t in arrivals(seconds, scale, seed + 1000 * (index - days + 1), day)]


def rate_at(fraction: float, day: Day = DAY) -> float:
    start = 0.0
    for share, first, last in day:
        if fraction < start + share:
            return first + (last - first) * (fraction - start) / share
        start += share
    return day[-1][2]


@dataclass
class Run:
    name: str
    pool_spec: dict
    trace: list[float]
    measure_from: float = 0.0  # seconds into the trace: earlier days only teach a pool with a period
    waits: list[float] = field(default_factory=list)
    idle_handle_seconds: float = 0.0
    unbound: list[int] = field(default_factory=list)


def api_of(stack: LocalStack) -> client.CustomObjectsApi:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
    return client.CustomObjectsApi(client.ApiClient(configuration))


def create(api: client.CustomObjectsApi, namespace: str, plural: str, kind: str, name: str, spec: dict) -> None:
    api.create_namespaced_custom_object(D, "v1", namespace, plural, {
        "apiVersion": f"{D}/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def pool_available(api: client.CustomObjectsApi) -> int:
    pool = api.get_namespaced_custom_object(D, "v1", NS, "resourcepools", "demand")
    return int(((pool.get("status") or {}).get("resourceHandleCount") or {}).get("available") or 0)


def wait_until(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(1)
    raise SystemExit(f"timed out after {timeout}s")


def claim_waits(api: client.CustomObjectsApi, names: set[str]) -> list[float]:
    waits = []
    for claim in api.list_namespaced_custom_object(D, "v1", USER_NS, "resourceclaims")["items"]:
        if claim["metadata"]["name"] not in names:
            continue
        ready = next((c for c in (claim.get("status") or {}).get("conditions") or []
                      if c["type"] == "Ready" and c["status"] == "True"), None)
        if ready:
            waits.append(_time(ready["lastTransitionTime"]) - _time(claim["metadata"]["creationTimestamp"]))
    return waits


def _time(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").timestamp()


def replay(run: Run, args: argparse.Namespace) -> None:
    # the time-based readinessCheck reads the clock: such handles re-run every POOLBOY_TIME_DEPENDENT_INTERVAL (the
    # handle sweep passes over converged handles), so that interval is what "re-checked every 2 s" needs
    env = {"POOLBOY_MANAGE_HANDLES_INTERVAL": "2", "POOLBOY_MANAGE_POOLS_INTERVAL": "3",
           "POOLBOY_TIME_DEPENDENT_INTERVAL": "2"}
    with LocalStack(StackOptions(workers=args.workers, concurrency=1, env=env)) as stack:
        api = api_of(stack)
        client.CoreV1Api(api.api_client).create_namespace({"metadata": {"name": USER_NS}})
        ready = (f"(now(true) - (metadata.creationTimestamp | to_datetime('%Y-%m-%dT%H:%M:%S%z')))"
                 f".total_seconds() > {args.ready_seconds}")
        create(api, NS, "resourceproviders", "ResourceProvider", "demand", {
            "template": {"enable": True, "definition": {"apiVersion": "v1", "kind": "ConfigMap",
                                                        "metadata": {"namespace": USER_NS}, "data": {"v": "x"}}},
            "override": {"metadata": {"name": "d-{{ guid }}"}}, "readinessCheck": ready, "healthCheck": "true"})
        create(api, NS, "resourcepools", "ResourcePool", "demand",
               {"provider": {"name": "demand", "parameterValues": {}}, **run.pool_spec})
        floor = int(run.pool_spec.get("minAvailable") or 0)
        wait_until(lambda: pool_available(api) >= floor, 120)
        time.sleep(args.ready_seconds + 4)  # the initial handles become ready: the day starts warm
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                if time.monotonic() - started >= run.measure_from:
                    count = pool_available(api)
                    run.unbound.append(count)
                    run.idle_handle_seconds += count
                stop.wait(1)

        sampler = threading.Thread(target=sample, daemon=True)
        started = time.monotonic()
        sampler.start()
        for index, offset in enumerate(run.trace):
            delay = started + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            create(api, USER_NS, "resourceclaims", "ResourceClaim", f"c{index:04d}",
                   {"provider": {"name": "demand", "parameterValues": {}}})
        stop.set()
        sampler.join()
        measured = {f"c{index:04d}" for index, offset in enumerate(run.trace) if offset >= run.measure_from}
        wait_until(lambda: len(claim_waits(api, measured)) == len(measured), 300)
        run.waits = claim_waits(api, measured)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def summary(run: Run, args: argparse.Namespace) -> dict:
    warm = sum(1 for w in run.waits if w <= args.warm_seconds)
    return {"sizing": run.name, "claims": len(run.waits), "warm_hit_ratio": round(warm / max(1, len(run.waits)), 3),
            "wait_p50_s": percentile(run.waits, 0.5), "wait_p99_s": percentile(run.waits, 0.99),
            "idle_handle_seconds": round(run.idle_handle_seconds), "mean_unbound": round(
                statistics.fmean(run.unbound), 2) if run.unbound else 0.0}


def plot(runs: list[Run], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    figure, (top, bottom) = pyplot.subplots(2, 1, figsize=(9, 7))
    for run in runs:
        top.plot(range(len(run.unbound)), run.unbound, label=run.name)
        bottom.plot(sorted(run.waits), [i / max(1, len(run.waits)) for i in range(len(run.waits))], label=run.name)
    top.set(xlabel="seconds into the day", ylabel="unbound pool handles")
    bottom.set(xlabel="claim wait (s)", ylabel="share of claims")
    top.legend()
    bottom.legend()
    figure.tight_layout()
    figure.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=150, help="length of the compressed day")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every arrival rate")
    parser.add_argument("--seed", type=int, default=20, help="the measured day's seed")
    parser.add_argument("--day", choices=sorted(DAYS), default="compact", help="the day's shape")
    parser.add_argument("--period", action="store_true",
                        help="autoscaling learns the day (spec.autoscaling.period = --seconds)")
    parser.add_argument("--learn-days", type=int, default=3,
                        help="with --period: days replayed before the measured one, for the pool to learn")
    parser.add_argument("--static", default="2,5", help="static minAvailable values to run")
    parser.add_argument("--autoscaling", action="store_true", help="also run autoscaling")
    parser.add_argument("--max-available", type=int, default=12)
    parser.add_argument("--window", type=int, default=None,
                        help="autoscaling window, seconds (default: a fifth of the day)")
    parser.add_argument("--scale-down-delay", type=int, default=None,
                        help="autoscaling scaleDownDelay, seconds (default: a tenth of the day)")
    parser.add_argument("--warm-hit-ratio", type=float, default=None,
                        help="autoscaling warmHitRatio (default: the pool's default, 0.95)")
    parser.add_argument("--ready-seconds", type=int, default=8)
    parser.add_argument("--warm-seconds", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plot", help="PNG path (needs matplotlib)")
    args = parser.parse_args()
    trace = arrivals(args.seconds, args.scale, args.seed, DAYS[args.day])
    runs = [Run(f"static {n}", {"minAvailable": int(n)}, trace) for n in args.static.split(",") if n]
    if args.autoscaling:
        window = args.window or max(1, int(args.seconds // 5))
        delay = args.scale_down_delay if args.scale_down_delay is not None else max(1, int(args.seconds // 10))
        autoscaling = {"maxAvailable": args.max_available, "window": f"{window}s", "scaleDownDelay": f"{delay}s"}
        if args.warm_hit_ratio is not None:
            autoscaling["warmHitRatio"] = args.warm_hit_ratio
        name, days = f"autoscaling (window {window}s, scaleDownDelay {delay}s)", 1
        if args.period:
            autoscaling["period"] = f"{args.seconds:g}s"
            name, days = f"{name[:-1]}, period {args.seconds:g}s after {args.learn_days} days)", args.learn_days + 1
        runs.append(Run(name, {"minAvailable": 1, "autoscaling": autoscaling},
                        days_of_arrivals(args.seconds, args.scale, args.seed, DAYS[args.day], days),
                        (days - 1) * args.seconds))
    results = []
    for run in runs:
        replay(run, args)
        results.append(summary(run, args))
        print(json.dumps(results[-1]), file=sys.stderr)
    print(f"{'sizing':<40} {'claims':>6} {'warm':>6} {'p50 s':>6} {'p99 s':>6} {'idle handle-s':>14}", file=sys.stderr)
    for row in results:
        print(f"{row['sizing']:<40} {row['claims']:>6} {row['warm_hit_ratio']:>6} {row['wait_p50_s']:>6} "
              f"{row['wait_p99_s']:>6} {row['idle_handle_seconds']:>14}", file=sys.stderr)
    json.dump({"seconds": args.seconds, "day": args.day, "seed": args.seed, "claims": len(trace),
               "ready_seconds": args.ready_seconds,
               "results": results, "unbound_per_second": {run.name: run.unbound for run in runs}}, sys.stdout)
    print()
    if args.plot:
        plot(runs, args.plot)


if __name__ == "__main__":
    main()

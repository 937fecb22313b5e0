"""Claim benchmarks W1–W6 and modes on the whole local stack (devcluster, Redis, watcher, N workers, beat).

Starts the stack exactly as ``poolboy dev`` does (:class:`stack.local.LocalStack`), creates the workload
(:mod:`benchmarks.workload`), runs it, and prints one JSON document on stdout and a human summary on stderr.

* W1 warm burst: a pool of N; wait until its N handles and their resources exist and the system is idle; then
  N claims as fast as one client can create them.
* W2 cold burst: the same N claims, no pool (every claim creates its handle).
* W3 steady: a pool of 20, claims at ``--rate`` per second for ``--seconds``.
* W4 scaling: W1 with 1, 2 and 4 worker processes.
* W5 scale-out: ``--scale-n`` claims cold (so twice as many claims + handles); memory of every component, Redis
  memory, the duration of a full resync, and the time to converge after restarting watcher, workers and beat.
* W6 latency scaling: W1 with devcluster adding ``--latency-ms`` (10) to every API request but watches, as a real
  API server a network round trip away, at 1, 2, 4 and 8 worker processes; throughput and its ratio to 1 worker.
* MEM: a default ``poolboy dev`` stack (no Flower), idle, then a small W1 (``--mem-n``), idle: PSS per component
  and the operator's sum (watcher + workers + beat).
* CACHE: ``--cache-n`` claims cold; Redis ``used_memory`` and the keys under the object cache's prefix before and
  after, per 10 000 cached objects.
* IDLE: ``--scale-n`` claims at rest for ``--idle-seconds``: operator CPU, API requests/s, Redis commands/s.
* STARTUP: ``poolboy dev`` (or ``upstream_dev.py dev``) launched; seconds to its ready line, and per component.
* RTT: Redis commands and sequential round trips of one warm bind (:mod:`benchmarks.redis_rtt`).
* SCALE: ``--scale-n`` bound claims at rest, a burst on top, a watcher restart and a Redis loss
  (:mod:`benchmarks.scale`).
* WD delete burst: W2's N claims bound with their resources, idle; then every claim deleted as fast as one client
  can, until every claim, handle and managed resource is gone (from watches) and the system is idle again.

``--cluster real`` runs either system on the real control plane (:mod:`controlplane`) instead of devcluster, and
adds what the API server served (its ``/metrics``) and the CPU of kube-apiserver and etcd to every burst and rest.

``--systems project,upstream`` runs each workload on the project and on upstream Poolboy v1.17.3
(:mod:`benchmarks.systems`), interleaved (for each repeat, each workload, each system), and prints a
project/upstream ratio table (:mod:`benchmarks.compare`). ``--shape upstream|benchitem`` picks the workload's
shape (:mod:`benchmarks.workload`); ``--redis-latency-ms`` puts the project's Redis behind
:mod:`benchmarks.latency_proxy`.

Per claim, create→bound (``status.resourceHandle`` appears) and create→state (``status.resources[0].state``
appears) are taken from a watch on claims. API requests come from devcluster's counters; the benchmark's own
requests (claim creates, its watches, its polling) are subtracted so the figures are the operator's. Requests by
verb and resource, and CPU per claim per component, are read twice: when all claims are bound with state
("without replenishment") and when the system is idle again, the pool refilled ("with").

    .venv/bin/python benchmarks/claims.py --workloads W1,W2,W3 --n 300 --repeat 3
    .venv/bin/python benchmarks/claims.py --workloads W1 --n 300 --profile /tmp/prof   # py-spy the workers
    .venv/bin/python benchmarks/claims.py --workloads W6 --n 300 --pool threads --concurrency 8
    .venv/bin/python benchmarks/claims.py --workloads MEM,CACHE
    .venv/bin/python benchmarks/claims.py --cluster real --workloads WD --n 300 --repeat 2
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from benchmarks import (
    compare,
    latency_proxy,
    procstats,
    redis_rtt,
    rediscache,
)
from benchmarks import summary as summary_table
from benchmarks.harness import (
    AUTO_CREATORS,
    WITH,
    WITHOUT,
    Bench,
    HandleCensus,
    Phase,
    Stack,
    at_rest,
    concurrency_of,
    creators,
    open_system,
    project_only,
    summarise,
    task_events_env,
)
from benchmarks.scale import run_scale
from benchmarks.systems import SYSTEMS, ProjectStack, time_startup
from benchmarks.workload import API, CLAIM_NS, ITEM_GROUP, OPERATOR_NS, SHAPES, Workload
from stack.local import StackOptions
from stack.worker import DEFAULT_CONCURRENCY, DEFAULT_POOL, POOLS, local_concurrency


def burst_settings(args: argparse.Namespace, stack: Stack, workers: int, latency_ms: float) -> dict[str, Any]:
    """What a burst ran with, and the operator's start-up on a running API server: the project's components until
    all are ready; upstream's harness until Kopf is live and watching (on the real control plane it applies the
    CRDs too)."""
    return {"workers": workers, "concurrency": concurrency_of(args, workers), "pool": args.pool,
            "api_latency_ms": latency_ms, "create_threads": creators(args, latency_ms),
            "task_events": args.task_events, "redis_latency_ms": getattr(stack, "redis_latency_ms", None),
            "shape": args.shape, "operator_ready_s": round(stack.ready_s, 2)}


def run_burst(args: argparse.Namespace, workers: int, n: int, warm: bool, latency_ms: float = 0.0,
              name: str | None = None) -> dict[str, Any]:
    label = f"{name or ('W1' if warm else 'W2')}-{workers}w-{n}"
    with open_system(args, workers, latency_ms) as stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            result = burst_settings(args, stack, workers, latency_ms)
            if warm:
                result["pool_fill_s"] = round(bench.fill_pool(n), 2)
            phase = Phase(bench, args.profile, label, args.redis_purposes)
            clock, start, created = phase.run_claims([f"c{i:05d}" for i in range(n)], None, 900,
                                                     creators(args, latency_ms))
            result.update(summarise(clock, start, created))
            result.update(phase.finish(n))
            return result
        finally:
            bench.close()


def run_delete_burst(args: argparse.Namespace) -> dict[str, Any]:
    """WD: W2's claims bound cold with their resources, idle; then every claim deleted (as W2 creates them), until
    every claim, handle and managed resource is gone and the system is idle again. "Without replenishment" is
    when all are gone, "with" when idle after."""
    n = args.n
    with open_system(args, args.workers) as stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            result = burst_settings(args, stack, args.workers, 0.0)
            names = [f"d{i:05d}" for i in range(n)]
            clock, start, created = bench.run_claims(names, None, 900, creators(args, 0.0))
            result["setup_all_bound_s"] = summarise(clock, start, created)["all_bound_s"]
            bench.wait_idle(quiet=3.0)
            bench.wait_drained()
            phase = Phase(bench, args.profile, f"WD-{args.workers}w-{n}")
            result.update(bench.delete_claims(names, 900, creators(args, 0.0)))
            phase.mark(WITHOUT)
            result.update(phase.finish(n))
            return result
        finally:
            bench.close()


def run_steady(args: argparse.Namespace) -> dict[str, Any]:
    with open_system(args, args.workers) as stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            result: dict[str, Any] = {"workers": args.workers, "concurrency": concurrency_of(args, args.workers),
                                      "rate": args.rate, "seconds": args.seconds, "pool": 20}
            result["pool_fill_s"] = round(bench.fill_pool(20), 2)
            census = HandleCensus()
            bench.start_watch("ResourceHandle", OPERATOR_NS, census.observe)
            census.tracking = True
            n = int(args.rate * args.seconds)
            phase = Phase(bench, args.profile, "W3")
            clock, start, created = phase.run_claims([f"s{i:05d}" for i in range(n)], args.rate, args.seconds + 300)
            result.update(summarise(clock, start, created))
            result["min_unbound_handles"] = census.minimum
            result["pool_ever_empty"] = census.minimum == 0
            result.update(phase.finish(n))
            return result
        finally:
            bench.close()


def _trigger_resync(stack: ProjectStack) -> None:
    from celery import Celery

    from workers.names import PERIODIC_PREFIX, PERIODIC_QUEUE

    probe = Celery(broker=stack.redis_url)
    try:
        probe.send_task(PERIODIC_PREFIX + "resync", queue=PERIODIC_QUEUE)
    finally:
        probe.close()


def run_scale_out(args: argparse.Namespace) -> dict[str, Any]:
    project_only(args, "W5")
    n = args.scale_n
    with open_system(args, args.workers) as stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            result: dict[str, Any] = {"workers": args.workers, "concurrency": concurrency_of(args, args.workers),
                                      "claims": n,
                                      "handles": n}
            phase = Phase(bench, None, "W5")
            clock, start, created = phase.run_claims([f"x{i:05d}" for i in range(n)], None, 3600)
            result.update(summarise(clock, start, created))
            result.update(phase.finish(n))
            # full resync: every object through the work queue; converged objects cause reads only
            bench.reset_counters()
            began = time.monotonic()
            _trigger_resync(stack)
            bench.wait(lambda: bench.counters().get("total", 0) > 0, 60, "resync to start", interval=0.05)
            last = bench.wait_idle(quiet=3.0, verbs=None)
            result["resync_s"] = round(last - began, 2)
            result["resync_requests"] = bench.operator_requests()
            # restart every operator component (devcluster and Redis keep their state)
            bench.reset_counters()
            began = time.monotonic()
            for child in reversed(stack.children):
                child.stop()
            stack.children.clear()
            stack._start_components()
            stack._wait_ready()
            result["restart_ready_s"] = round(time.monotonic() - began, 2)
            last = bench.wait_idle(quiet=3.0, verbs=None)
            result["converge_after_restart_s"] = round(last - began, 2)
            result["requests_after_restart"] = bench.operator_requests()
            result["components_after_restart"] = procstats.report(bench.pids(), {})
            return result
        finally:
            bench.close()


# --- reporting ---------------------------------------------------------------------------------------------------


def _get(run: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = run
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def median_min(runs: list[dict[str, Any]], path: tuple[str, ...]) -> dict[str, float | None]:
    values = [v for v in (_get(run, path) for run in runs) if isinstance(v, (int, float))]
    return {"median": round(statistics.median(values), 4) if values else None,
            "min": min(values) if values else None}


AGGREGATES = {
    "all_bound_s": ("all_bound_s",), "all_state_s": ("all_state_s",),
    "bound_p50_s": ("create_to_bound", "p50"), "bound_p99_s": ("create_to_bound", "p99"),
    "state_p99_s": ("create_to_state", "p99"), "api_per_claim": ("api_requests_per_claim", "total"),
    "throughput_per_s": ("throughput_per_s",),
    "api_per_claim_with": ("api_requests_by_verb_resource", WITH, "total"),
    "api_per_claim_without": ("api_requests_by_verb_resource", WITHOUT, "total"),
    "operator_cpu_ms_per_claim_with": ("cpu_ms_per_claim", WITH, "operator"),
    "operator_cpu_ms_per_claim_without": ("cpu_ms_per_claim", WITHOUT, "operator"),
    "operator_pss_mib": ("operator_pss_mib",),
    "operator_cpu_s_without": ("operator_cpu_s", WITHOUT), "operator_cpu_s_with": ("operator_cpu_s", WITH),
    "operator_cpu_s_replenishment": ("operator_cpu_s", "replenishment"),
    "redis_commands_per_claim_with": ("redis_commands_per_claim", WITH, "total"),
    "redis_commands_per_claim_without": ("redis_commands_per_claim", WITHOUT, "total"),
    "operator_ready_s": ("operator_ready_s",),
    "control_plane_cpu_ms_per_claim_with": ("control_plane", WITH, "cpu_ms_per_claim", "total"),
    "apiserver_requests_per_claim_with": ("control_plane", WITH, "requests_per_claim", "total"),
    "etcd_requests_per_claim_with": ("control_plane", WITH, "etcd_requests_per_claim"),
    "all_gone_s": ("all_gone_s",), "gone_p50_s": ("delete_to_gone", "p50"), "gone_p99_s": ("delete_to_gone", "p99"),
}


def aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"runs": runs, **{name: median_min(runs, path) for name, path in AGGREGATES.items()}}


#: the workloads summarised by :func:`aggregate` (bursts)
BURSTS = ("W1", "W2", "W3", "W4", "W5", "W6", "WD")


def with_scaling(series: dict[str, Any]) -> dict[str, Any]:
    """Each worker count's summary of a series (W4, W6) gets its throughput relative to the first count's
    (``scaling``: 1 worker's when the series starts at 1)."""
    counts = list(series)
    base = series[counts[0]]["throughput_per_s"]["median"] if counts else None
    for workers in counts:
        mine = series[workers]["throughput_per_s"]["median"]
        series[workers]["scaling"] = {"vs_workers": int(counts[0]),
                                      "throughput_ratio": round(mine / base, 2) if mine and base else None}
    return series


# --- memory and cache modes ----------------------------------------------------------------------------------------


def footprint(bench: Bench) -> dict[str, Any]:
    """PSS and RSS per component now, the operator's sums (watcher + workers + beat), and Redis ``used_memory``."""
    components = procstats.report(bench.pids(), {})
    for figures in components.values():
        figures.pop("cpu_s", None)  # CPU since the process started: not a figure of this mode
    return {"components": components, "operator_pss_mib": procstats.operator_sum(components, "pss_mib"),
            "operator_rss_mib": procstats.operator_sum(components, "rss_mib"),
            "redis_used_memory_mib": bench.redis_memory_mib()}


def dev_defaults() -> argparse.Namespace:
    """The options ``poolboy dev`` runs with when given none (workers, concurrency, pool)."""
    from stack import dev

    parser = argparse.ArgumentParser()
    dev.add_arguments(parser)
    return parser.parse_args([])


def run_memory(args: argparse.Namespace) -> dict[str, Any]:
    """MEM: a default ``poolboy dev`` stack (without Flower, which is not the operator; upstream: its one
    process), idle; then W1 (pool of ``--mem-n``, as many claims); idle again. PSS per component at both points,
    and the operator's highest PSS sum sampled every 0.5 s from filling the pool to idle after the burst."""
    defaults = dev_defaults()
    options = StackOptions(workers=defaults.workers, concurrency=defaults.concurrency, pool=defaults.pool,
                           env=task_events_env(args),
                           log_dir=Path(args.log_dir) / f"mem-{time.strftime('%H%M%S')}" if args.log_dir else None)
    with open_system(args, options.workers, options=options) as stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            bench.wait_idle()
            concurrency = options.concurrency or local_concurrency(options.workers, pool=options.pool)
            result: dict[str, Any] = {"workers": options.workers, "concurrency": concurrency,
                                      "pool": options.pool, "n": args.mem_n, "idle_at_start": footprint(bench)}
            if args.system == "upstream":
                result |= {"workers": 1, "concurrency": 1, "pool": "kopf (one process)"}
            sampler = procstats.PeakPss(bench.pids()).start()
            try:
                bench.fill_pool(args.mem_n)
                bench.run_claims([f"m{i:05d}" for i in range(args.mem_n)], None, 900)
                bench.wait_idle()
            finally:
                result["peak_during_w1"] = sampler.stop()
            result["idle_after_w1"] = footprint(bench)
            return result
        finally:
            bench.close()


def run_cache(args: argparse.Namespace) -> dict[str, Any]:
    """CACHE: Redis memory of the watcher's object cache per 10 000 objects. ``--cache-n`` claims cold (each
    brings a handle and a managed BenchItem); ``used_memory`` and the keys under ``--cache-prefix`` before and
    after, at idle."""
    project_only(args, "CACHE")
    n = args.cache_n
    with open_system(args, args.workers) as stack:
        bench = Bench(stack, Workload(args.shape))
        client = bench.redis
        try:
            bench.setup()
            bench.wait_idle()
            before, used_before = rediscache.census(client, args.cache_prefix), rediscache.used_memory(client)
            bench.run_claims([f"k{i:05d}" for i in range(n)], None, 1800)
            bench.wait_idle()
            after, used_after = rediscache.census(client, args.cache_prefix), rediscache.used_memory(client)
            objects = {kind: len(bench.kube.list(api, kind, CLAIM_NS if kind != "ResourceHandle" else OPERATOR_NS))
                       for api, kind in ((API, "ResourceClaim"), (API, "ResourceHandle"),
                                         (f"{ITEM_GROUP}/v1", "BenchItem"))}
            return {"workers": args.workers, "claims": n, "api_objects": objects, "used_memory_before": used_before,
                    "used_memory_after": used_after, "cache_before": before, "cache_after": after,
                    **rediscache.per_10k(before, after, used_before, used_after)}
        finally:
            bench.close()


def connection_names(stack: ProjectStack) -> dict[str, str]:
    """MONITOR's client address -> component, through the latency proxy's ``connection P -> Q`` lines and the
    components' TCP connections to the proxy."""
    assert stack.proxy is not None
    proxy_port = int(stack.proxy.match.group(1))
    through = latency_proxy.parse_connections(stack.proxy.lines)
    names: dict[str, str] = {}
    for component, pid in stack.pids().items():
        with suppress(psutil.Error):
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                for conn in proc.net_connections(kind="tcp"):
                    if conn.raddr and conn.raddr.port == proxy_port and conn.laddr.port in through:
                        names[f"127.0.0.1:{through[conn.laddr.port]}"] = component
    return names


def run_rtt(args: argparse.Namespace) -> dict[str, Any]:
    """RTT: the Redis commands and sequential round trips of one warm bind. One worker process (concurrency 1),
    every component behind the latency proxy at ``--rtt-latency-ms`` (so round trips stand apart in time), a pool
    of 3, idle; then ``MONITOR`` while one claim is created and bound (:mod:`benchmarks.redis_rtt`)."""
    project_only(args, "RTT")
    options = StackOptions(workers=1, concurrency=1, pool=args.pool, env=task_events_env(args),
                           log_dir=Path(args.log_dir) / f"rtt-{time.strftime('%H%M%S')}" if args.log_dir else None)
    stack = open_system(args, 1, options=options, redis_latency_ms=args.rtt_latency_ms)
    assert isinstance(stack, ProjectStack)
    with stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            bench.fill_pool(3)
            bench.wait_idle(quiet=3.0)
            host, port = stack.direct_redis_url.split("//", 1)[1].split("/", 1)[0].split(":")
            monitor = redis_rtt.Monitor(host, int(port)).start()
            began = time.time()
            clock, _, _ = bench.run_claims(["rtt00000"], None, 120)
            name = "rtt00000"
            bound = began + (clock.bound[name] - clock.created[name])
            commands = monitor.stop()
            names = connection_names(stack)
            result = {"latency_ms": args.rtt_latency_ms, "create_to_bound_s": round(bound - began, 4),
                      **redis_rtt.analyse(commands, began, bound, args.rtt_latency_ms / 1000, names)}
            path = result["critical_path_without_background"]
            print(f"RTT: {result['commands']} commands, {result['critical_path']['round_trips']} round trips "
                  f"between create and bound, {path['round_trips']} without beat's:\n  " + "\n  ".join(path["trips"]),
                  file=sys.stderr, flush=True)
            return result
        finally:
            bench.close()


def versions() -> dict[str, str]:
    from importlib.metadata import version

    result = {"python": platform.python_version()}
    for package in ("celery", "kombu", "redis", "kubernetes", "orjson"):
        with suppress(Exception):
            result[package] = version(package)
    with suppress(Exception):
        result["redis-server"] = subprocess.run(["redis-server", "--version"], capture_output=True, text=True,
                                                check=False).stdout.split()[2]
    with suppress(Exception):
        result["git"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                       cwd=Path(__file__).resolve().parent.parent, check=False).stdout.strip()
    return result


def run_idle(args: argparse.Namespace) -> dict[str, Any]:
    """IDLE: API requests and operator CPU per second when nothing changes, at the default sweep intervals.
    ``--scale-n`` claims cold (as many handles and BenchItems), wait until idle, then count the operator's
    requests and CPU over ``--idle-seconds`` (the project sweeps claims and handles every 60 s, pools every 10 s;
    choose ≥ 130 s for two sweeps, ≥ 600 s to include a full resync; upstream runs its own default intervals)."""
    n = args.scale_n
    with open_system(args, args.workers) as stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            bench.run_claims([f"i{i:05d}" for i in range(n)], None, 3600)
            bench.wait_idle(quiet=3.0)
            bench.wait_drained()
            return {"claims": n, **at_rest(bench, args.idle_seconds, objects=3 * n)}
        finally:
            bench.close()


#: figures of the modes over repeats (median and min), named apart from the run's own keys
MODE_AGGREGATES: dict[str, dict[str, tuple[str, ...]]] = {
    "STARTUP": {"startup_ready_s": ("ready_s",)},
    "MEM": {"idle_pss_mib": ("idle_at_start", "operator_pss_mib"),
            "peak_pss_mib": ("peak_during_w1", "operator_pss_mib"),
            "after_pss_mib": ("idle_after_w1", "operator_pss_mib")},
    "IDLE": {"idle_operator_cpu_s": ("operator_cpu_s",), "idle_requests_per_s": ("requests_per_s",)},
    "RTT": {"rtt_path_round_trips": ("critical_path", "round_trips"),
            "rtt_path_round_trips_without_beat": ("critical_path_without_background", "round_trips"),
            "rtt_commands": ("commands",)},
    "CACHE": {},
    "SCALE": {"scale_rest_operator_cpu_s_per_minute": ("rest", "operator_cpu_s_per_minute"),
              "scale_rest_requests_per_s": ("rest", "requests_per_s"),
              "scale_rest_memory_mib": ("rest", "memory", "operator_incl_redis_pss_mib"),
              "scale_burst_all_bound_s": ("burst", "all_bound_s"),
              "scale_burst_bound_p99_s": ("burst", "create_to_bound", "p99"),
              "scale_burst_cpu_ms_per_claim": ("burst", "cpu_ms_per_claim", WITH, "operator"),
              "scale_burst_api_per_claim": ("burst", "api_requests_by_verb_resource", WITH, "total"),
              "scale_watcher_restart_quiet_s": ("watcher_restart", "quiet_s"),
              "scale_redis_loss_quiet_s": ("redis_loss", "quiet_s")},
}
#: series of runs at several worker counts: one summary per count
SERIES = ("W4", "W6", "STARTUP")
#: modes that need the project's own components or Redis
PROJECT_ONLY = ("W5", "CACHE", "RTT")


class Unit(NamedTuple):
    """One measured run: a workload, its worker count in a series ("" otherwise), the systems it runs on."""

    workload: str
    key: str
    run: Callable[[], dict[str, Any]]
    systems: tuple[str, ...]


def plan(args: argparse.Namespace, chosen: list[str], systems: tuple[str, ...]) -> list[Unit]:
    """The runs of one repeat, in order. Series run upstream (one process) at their first worker count only."""
    single: dict[str, Callable[[], dict[str, Any]]] = {
        "W1": lambda: run_burst(args, args.workers, args.n, warm=True),
        "W2": lambda: run_burst(args, args.workers, args.n, warm=False),
        "W3": lambda: run_steady(args),
        "W5": lambda: run_scale_out(args),
        "MEM": lambda: run_memory(args),
        "CACHE": lambda: run_cache(args),
        "IDLE": lambda: run_idle(args),
        "RTT": lambda: run_rtt(args),
        "SCALE": lambda: run_scale(args),
        "WD": lambda: run_delete_burst(args),
    }
    counts = {"W4": [1, 2, 4], "W6": [int(w) for w in args.w6_workers.split(",")],
              "STARTUP": [int(w) for w in args.startup_workers.split(",")]}
    units = []
    for name in chosen:
        allowed = tuple(s for s in systems if s == "project" or name not in PROJECT_ONLY)
        if name in single:
            units.append(Unit(name, "", single[name], allowed))
            continue
        for index, workers in enumerate(counts[name]):
            if name == "STARTUP":
                run: Callable[[], dict[str, Any]] = functools.partial(
                    lambda w: time_startup(args.system, w, concurrency_of(args, w), args.pool), workers)
            else:
                run = functools.partial(run_burst, args, workers, args.n, True,
                                        args.latency_ms if name == "W6" else 0.0, name)
            units.append(Unit(name, str(workers), run, allowed if index == 0 else ("project",)))
    return units


def summarise_runs(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Bursts: :func:`aggregate`. Modes: the last run's document, every run, and the median and min of the
    mode's figures."""
    if name in BURSTS:
        return aggregate(runs)
    figures = {key: median_min(runs, path) for key, path in MODE_AGGREGATES[name].items()}
    return {**runs[-1], "runs": runs, **figures}


def run_all(args: argparse.Namespace, units: list[Unit], systems: tuple[str, ...]
            ) -> dict[str, dict[str, Any]]:
    """``--repeat`` rounds; in each, every unit on every system in turn (interleaved, so a slow spell of the
    machine hits both). A run that fails is recorded as its error and the series goes on."""
    runs: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {s: collections.defaultdict(list) for s in systems}
    for repeat in range(args.repeat):
        for unit in units:
            for system in unit.systems:
                args.system = system
                label = f"[{repeat + 1}/{args.repeat}] {system} {unit.workload} {unit.key}".rstrip()
                print(f"{label} ...", file=sys.stderr, flush=True)
                try:
                    result = unit.run()
                except Exception as error:  # one failed run must not end a long series
                    traceback.print_exc()
                    result = {"error": f"{type(error).__name__}: {error}"}
                runs[system][(unit.workload, unit.key)].append({"system": system, **result})
    workloads: dict[str, dict[str, Any]] = {}
    for system, by_unit in runs.items():
        out: dict[str, Any] = {}
        for (name, key), results in by_unit.items():
            good = [r for r in results if "error" not in r] or results
            summary = summarise_runs(name, good)
            summary["errors"] = [r["error"] for r in results if "error" in r]
            if key:
                out.setdefault(name, {})[key] = summary
            else:
                out[name] = summary
        for name in ("W4", "W6"):
            if name in out:
                with suppress(KeyError, TypeError):
                    with_scaling(out[name])
        workloads[system] = out
    return workloads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="W1,W2,W3",
                        help="comma list of W1..W6, WD, MEM, CACHE, IDLE, STARTUP, RTT, SCALE (default W1,W2,W3)")
    parser.add_argument("--systems", default="project",
                        help="comma list of project, upstream (default project); several: interleaved runs and a"
                             " project/upstream ratio table")
    parser.add_argument("--cluster", choices=("devcluster", "real"), default="devcluster",
                        help="the API server both systems run on: devcluster, or the real control plane "
                             "(kube-apiserver, etcd, controller manager; its /metrics and their CPU are recorded too)")
    parser.add_argument("--shape", choices=SHAPES, default="upstream",
                        help="workload shape (benchmarks/workload.py; default upstream)")
    parser.add_argument("--n", type=int, default=300, help="claims per burst (W1, W2, W4, W6, WD)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for W1–W3, W5, CACHE (default 2)")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="pool size (threads or processes) per worker (default: as `poolboy dev` chooses for "
                             f"the worker count, stack.worker.local_concurrency; at most {DEFAULT_CONCURRENCY})")
    parser.add_argument("--pool", choices=POOLS, default=DEFAULT_POOL,
                        help=f"Celery execution pool of every worker (default {DEFAULT_POOL}, as shipped)")
    parser.add_argument("--task-events", choices=("on", "off"), default="on",
                        help="workers send task events and heartbeats for Flower (default on, as shipped); compare "
                             "Redis commands and CPU per claim with off")
    parser.add_argument("--latency-ms", type=float, default=10.0,
                        help="W6: latency devcluster adds to every API request but watches (default 10)")
    parser.add_argument("--redis-latency-ms", type=float, default=0.0,
                        help="project: every component reaches Redis through benchmarks/latency_proxy.py, which"
                             " delays each chunk by this much each way (default 0: no proxy)")
    parser.add_argument("--w6-workers", default="1,2,4,8", help="W6: worker process counts (default 1,2,4,8)")
    parser.add_argument("--startup-workers", default="2",
                        help="STARTUP: worker process counts of `poolboy dev --workers` (default 2)")
    parser.add_argument("--create-threads", type=int, default=0,
                        help=f"threads creating a burst's claims (default: 1, or {AUTO_CREATORS} with latency)")
    parser.add_argument("--mem-n", type=int, default=20, help="MEM: pool size and claims of its W1 (default 20)")
    parser.add_argument("--cache-n", type=int, default=1000,
                        help="CACHE: claims created cold, each with a handle and a BenchItem (default 1000)")
    parser.add_argument("--cache-prefix", default=rediscache.DEFAULT_PREFIX,
                        help=f"CACHE: Redis key prefix of the object cache (default {rediscache.DEFAULT_PREFIX})")
    parser.add_argument("--rate", type=float, default=5.0, help="W3 claims per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="W3 duration")
    parser.add_argument("--scale-n", type=int, default=5000, help="W5, IDLE and SCALE claims (each gets a handle)")
    parser.add_argument("--scale-pool", type=int, default=100, help="SCALE: the pool's size (default 100)")
    parser.add_argument("--burst-n", type=int, default=1000,
                        help="SCALE: new claims in the burst on top of --scale-n (default 1000)")
    parser.add_argument("--probe-n", type=int, default=10,
                        help="SCALE: claims created after a restart or Redis loss to time recovery (default 10)")
    parser.add_argument("--idle-seconds", type=float, default=130.0,
                        help="IDLE and SCALE: the window at rest (default 130)")
    parser.add_argument("--rtt-latency-ms", type=float, default=5.0,
                        help="RTT: Redis latency that separates sequential round trips (default 5)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per workload (report median and min)")
    parser.add_argument("--profile", type=Path, default=None, help="py-spy the workers, watcher, devcluster into DIR")
    parser.add_argument("--log-dir", default=None, help="keep component logs under this directory")
    parser.add_argument("--redis-purposes", action="store_true",
                        help="W1/W2: also count Redis commands by purpose (broker, work queue, own writes, cache, ...) "
                             "through MONITOR, which slows Redis: not for timing runs")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON document to this file")
    args = parser.parse_args()
    args.system = "project"

    chosen = [w.strip().upper() for w in args.workloads.split(",") if w.strip()]
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    unknown = [name for name in chosen if name not in MODE_AGGREGATES and name not in BURSTS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}")
    if not systems or any(s not in SYSTEMS for s in systems):
        parser.error(f"--systems: comma list of {', '.join(SYSTEMS)}")
    report: dict[str, Any] = {
        "machine": {"cpus": psutil.cpu_count(), "mem_gib": round(psutil.virtual_memory().total / 2**30, 1),
                    "cpu": platform.processor() or platform.machine(), "load_at_start": psutil.getloadavg()},
        "date": time.strftime("%Y-%m-%d %H:%M"), "versions": versions(), "args": vars(args) | {
            "profile": str(args.profile) if args.profile else None, "output": None}}
    per_system = run_all(args, plan(args, chosen, systems), systems)
    report["systems"] = per_system
    report["workloads"] = per_system[systems[0]]  # the first system's, where summary.py looks
    for system, workloads in per_system.items():
        print(f"\n== {system}\n{summary_table.render(workloads)}", file=sys.stderr, flush=True)
    if "project" in per_system and "upstream" in per_system:
        report["ratios"] = compare.ratio_rows(per_system["project"], per_system["upstream"])
        print("\n== project / upstream\n" + compare.render(report["ratios"]), file=sys.stderr, flush=True)
    document = json.dumps(report, indent=2, default=str)
    if args.output:
        args.output.write_text(document + "\n")
    print(document)
    return 0


if __name__ == "__main__":
    sys.exit(main())

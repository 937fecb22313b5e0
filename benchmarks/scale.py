"""SCALE: a cluster the size users run, and what it costs at rest, in a burst, and to recover.

One run on one system (``claims.py --workloads SCALE --scale-n 10000``):

1. **fill**: a pool of ``--scale-pool`` and ``--scale-n`` claims created from ``--create-threads`` (default 4) clients;
   every claim bound with its state, then idle (each claim has a handle and a managed resource);
2. **rest**: ``--idle-seconds`` in which nothing changes (:func:`benchmarks.harness.at_rest`), then the memory of every
   component (the operator's PSS, Redis's, the API server's and etcd's);
3. **burst**: ``--burst-n`` new claims on top, measured as a burst is (:class:`benchmarks.harness.Phase`);
4. **watcher restart** (upstream: its one Kopf process) and, for the project, **Redis loss** (redis-server killed and
   started empty on its port): ``--probe-n`` claims created at once after each, and the time until they are all
   bound with state (``probes_bound_s``) and until the API server has been quiet for 3 s (``quiet_s``), with the
   requests the recovery cost.

Per-claim figures at two sizes (say 1 500 and 10 000) show how the cost grows; :mod:`benchmarks.plots` draws them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks import apimetrics, procstats
from benchmarks.harness import Bench, Phase, at_rest, concurrency_of, open_system, percentiles, project_only, summarise
from benchmarks.systems import ProjectStack, UpstreamStack
from benchmarks.workload import Workload

#: fill, burst and recoveries may take long at 10 000 claims on two cores (upstream binds tens per second)
TIMEOUT = 7200.0
#: how long a recovery may take before its run says so and goes on
RECOVERY_TIMEOUT = 900.0


def run_scale(args: argparse.Namespace) -> dict[str, Any]:
    """One SCALE run of ``args.system`` (see the module docstring)."""
    if args.cluster != "real":
        project_only(args, "SCALE on devcluster")  # upstream's restart needs a cluster that outlives its harness
    n, threads = args.scale_n, args.create_threads or 4
    with open_system(args, args.workers) as stack:
        bench = Bench(stack, Workload(args.shape))
        try:
            bench.setup()
            result: dict[str, Any] = {"claims": n, "pool": args.scale_pool, "workers": args.workers,
                                      "concurrency": concurrency_of(args, args.workers), "cluster": args.cluster}
            record(result, "fill", fill(bench, n, args.scale_pool, threads))
            objects = 3 * n + 2 * args.scale_pool  # claims, handles, resources; the pool's handles and resources
            record(result, "rest", {**at_rest(bench, args.idle_seconds, objects), "memory": memory(bench, objects)})
            phase = Phase(bench, args.profile, f"SCALE-{n}-burst")
            clock, start, created = phase.run_claims([f"b{i:05d}" for i in range(args.burst_n)], None, TIMEOUT,
                                                     threads)
            record(result, "burst", {**summarise(clock, start, created), **phase.finish(args.burst_n)})
            record(result, "watcher_restart",
                   recover(bench, lambda: restart_watcher(stack), "r", args.probe_n, threads))
            if isinstance(stack, ProjectStack):
                record(result, "redis_loss", recover(bench, lambda: lose_redis(stack), "l", args.probe_n, threads))
            return result
        finally:
            bench.close()


def record(result: dict[str, Any], phase: str, figures: dict[str, Any]) -> None:
    """Keep a phase's figures, and print them on stderr at once: a long run stopped later still leaves them."""
    result[phase] = figures
    print(f"SCALE {result['claims']} {phase}: {json.dumps(figures)}", file=sys.stderr, flush=True)


def fill(bench: Bench, n: int, pool: int, threads: int) -> dict[str, Any]:
    """The pool, then ``n`` claims (most of them cold: the pool is smaller), bound, resources made, idle."""
    began = time.monotonic()
    bench.fill_pool(pool)
    clock, start, created = bench.run_claims([f"s{i:05d}" for i in range(n)], None, TIMEOUT, threads)
    bench.wait_idle(quiet=3.0, timeout=TIMEOUT)
    bench.wait_drained(timeout=TIMEOUT)
    return {**summarise(clock, start, created), "seconds": round(time.monotonic() - began, 1)}


def memory(bench: Bench, objects: int) -> dict[str, Any]:
    """PSS of every component now, the operator's sum with and without Redis, and per 1 000 objects."""
    components = procstats.report(bench.pids(), {})
    operator = procstats.operator_sum(components, "pss_mib")
    redis = components.get("redis", {}).get("pss_mib", 0.0)
    return {"components": {name: figures["pss_mib"] for name, figures in components.items()},
            "operator_pss_mib": operator, "operator_incl_redis_pss_mib": round(operator + redis, 1),
            "operator_incl_redis_mib_per_1k_objects": round((operator + redis) * 1000 / objects, 2),
            "redis_used_memory_mib": bench.redis_memory_mib()}


def recover(bench: Bench, fault: Callable[[], float | None], prefix: str, probes: int,
            threads: int) -> dict[str, Any]:
    """Run ``fault`` (it returns the seconds until the restarted component said it was ready, if it says), then
    create ``probes`` claims at once: how long until they are served and the API server is quiet again, and what
    the recovery asked of it (the probes' own bind included)."""
    bench.wait_idle(quiet=3.0, timeout=TIMEOUT)
    bench.reset_counters()
    served = bench.served()
    began = time.monotonic()
    ready_s = fault()
    result: dict[str, Any] = {"ready_s": round(ready_s, 2) if ready_s is not None else None, "probes": probes}
    try:
        names = [f"{prefix}{i:04d}" for i in range(probes)]
        clock, _, _ = bench.run_claims(names, None, RECOVERY_TIMEOUT, threads)
        result["probes_bound_s"] = round(max(clock.state[name] for name in names) - began, 2)
        result["probe_create_to_bound"] = percentiles([clock.bound[name] - clock.created[name] for name in names])
        result["quiet_s"] = round(bench.wait_idle(quiet=3.0, verbs=None, timeout=RECOVERY_TIMEOUT) - began, 2)
    except TimeoutError as error:  # what it cost so far is still the figure
        result["timed_out"] = f"{error} within {RECOVERY_TIMEOUT:.0f} s"
    result["operator_requests"] = dict(bench.operator_by_verb_resource())
    result["operator_requests_total"] = sum(result["operator_requests"].values())
    after = bench.served()
    if served is not None and after is not None:
        result["control_plane"] = apimetrics.delta(served, after)
    return result


def restart_watcher(stack: ProjectStack | UpstreamStack) -> float:
    """The project's watcher stopped and started again (its informers list everything anew); for upstream, the
    operator process, which is its watcher."""
    if isinstance(stack, UpstreamStack):
        return stack.restart_operator()
    began = time.monotonic()
    stack.restart("watcher")
    stack._wait_ready()
    return time.monotonic() - began


def lose_redis(stack: ProjectStack) -> None:
    """redis-server killed and started again, empty, on its port: queues, cache and leases all gone."""
    server = stack.redis
    assert server is not None and server.process is not None, "the stack's own redis-server"
    server.process.kill()
    server.process.wait(10)
    server.start()

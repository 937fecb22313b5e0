"""The claim benchmarks' harness, shared by every workload (:mod:`benchmarks.claims`, :mod:`benchmarks.scale`): the
system under test opened from the command line's arguments (:func:`open_system`), the :class:`Bench` around it
(the workload created, claims issued and watched, counters read), one measured :class:`Phase` of claims, a
period :func:`at_rest`, and the figures a burst is summarised into.
"""

from __future__ import annotations

import argparse
import collections
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import redis

from benchmarks import (
    apicount,
    apimetrics,
    operator_metrics,
    procstats,
    pyspy,
    rediscache,
    redisops,
    redispurpose,
)
from benchmarks.systems import ProjectStack, UpstreamStack
from benchmarks.workload import API, CLAIM_NS, ITEM_API, OPERATOR_NS, Workload, item_crd
from poolboy.kube import AlreadyExists, KubeClient
from stack.local import StackOptions
from stack.worker import local_concurrency
from workers.names import CONSUME_ORDER
from workqueue import keyspace

Stack = ProjectStack | UpstreamStack

WRITE_VERBS = ("create", "update", "patch", "delete")
#: claim-creating threads when the API has injected latency (below the client's pool of 10 connections)
AUTO_CREATORS = 8


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

    def done(self, names: list[str]) -> bool:
        """Every one of ``names`` bound with its state (claims that were there before do not count)."""
        with self.lock:
            return all(name in self.bound and name in self.state for name in names)


@dataclass
class HandleCensus:
    """Unbound pool handles over time, from a watch on handles: W3's "the pool was never empty"."""

    unbound: set[str] = field(default_factory=set)
    minimum: int | None = None
    tracking: bool = False

    def observe(self, event_type: str, obj: dict) -> None:
        name = obj["metadata"]["name"]
        free = event_type != "DELETED" and not (obj.get("spec") or {}).get("resourceClaim") \
            and not obj["metadata"].get("deletionTimestamp")
        if free:
            self.unbound.add(name)
        else:
            self.unbound.discard(name)
        if self.tracking:
            self.minimum = len(self.unbound) if self.minimum is None else min(self.minimum, len(self.unbound))


@dataclass
class GoneClock:
    """Which objects of each watched kind are still there and when each claim went, from watches: WD's "every
    claim, handle and managed resource gone"."""

    live: dict[str, set[str]] = field(default_factory=lambda: collections.defaultdict(set))
    gone: dict[str, float] = field(default_factory=dict)  # claim name -> when its DELETED event came
    lock: threading.Lock = field(default_factory=threading.Lock)
    last: float = 0.0  # when the last object of any kind went

    def observer(self, kind: str) -> Callable[[str, dict], None]:
        def observe(event_type: str, obj: dict) -> None:
            name, now = obj["metadata"]["name"], time.monotonic()
            with self.lock:
                if event_type != "DELETED":
                    self.live[kind].add(name)
                    return
                self.live[kind].discard(name)
                self.last = now
                if kind == "ResourceClaim":
                    self.gone[name] = now
        return observe

    def empty(self) -> bool:
        with self.lock:
            return not any(self.live.values())


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)

    return {"p50": pick(0.50), "p90": pick(0.90), "p99": pick(0.99), "max": round(ordered[-1], 4)}


class Bench:
    """One running stack plus the benchmark's own client, watches and counters."""

    def __init__(self, stack: Stack, workload: Workload) -> None:
        self.stack = stack
        self.workload = workload
        self.kube = KubeClient.from_settings(kubeconfig=str(stack.kubeconfig))
        self.own = apicount.OwnRequests()  # the benchmark's own requests by verb and resource
        # straight to Redis (not through a latency proxy); None for upstream, which has no Redis
        self.redis = redis.Redis.from_url(stack.direct_redis_url) if stack.direct_redis_url else None
        self._stops: list[threading.Event] = []

    def close(self) -> None:
        for stop in self._stops:
            stop.set()
        self.kube.close()
        if self.redis is not None:
            self.redis.close()

    # --- setup ---------------------------------------------------------------------------------------------

    def setup(self) -> None:
        for body in (item_crd(), self.workload.claim_namespace(), self.workload.provider()):
            with suppress(AlreadyExists):
                self.kube.create(body)
        # the CRD is served a moment after its creation; discovery is re-tried on a miss
        self.wait(lambda: self._served("bench.example.com/v1", "BenchItem"), 30, "BenchItem served")

    def _served(self, api_version: str, kind: str) -> bool:
        try:
            self.kube.forget_discovery(api_version)
            self.kube.resource_info(api_version, kind)
            return True
        except Exception:
            return False

    def plural(self, api_version: str, kind: str) -> str:
        return self.kube.resource_info(api_version, kind).plural  # discovery is cached by the client

    def create(self, body: dict) -> dict:
        self.own.add("create", self.plural(body["apiVersion"], body["kind"]))
        return self.kube.create(body)

    def wait(self, condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if condition():
                return time.monotonic() - start
            time.sleep(interval)
        raise TimeoutError(f"timed out waiting for {what}")

    # --- devcluster counters -------------------------------------------------------------------------------

    def counters(self) -> dict:
        return self.stack.cluster.counters() if self.stack.cluster else {}

    def served(self) -> apimetrics.Snapshot | None:
        """The real API server's ``/metrics`` counters now; None on devcluster, which keeps no such counters."""
        from controlplane import ControlPlane

        cluster = self.stack.cluster
        if not isinstance(cluster, ControlPlane):
            return None
        return apimetrics.scrape(lambda path: str(cluster.request("GET", path)))

    def operator_work(self) -> collections.Counter[str]:
        """The project's reconcile runs by controller and work queue outcomes so far (nothing for upstream)."""
        urls = getattr(self.stack, "metrics_urls", None)
        return operator_metrics.snapshot(urls) if urls else collections.Counter()

    def reset_counters(self) -> None:
        self.own.clear()
        if self.stack.cluster:
            self.stack.cluster.reset_counters()

    def operator_requests(self) -> dict[str, int]:
        """Requests by verb since the last reset, minus the benchmark's own."""
        by_verb, own = self.counters().get("by_verb", {}), self.own.by_verb()
        return {verb: count - own.get(verb, 0) for verb, count in sorted(by_verb.items())
                if count - own.get(verb, 0) > 0}

    def operator_by_verb_resource(self) -> collections.Counter[str]:
        """Requests by ``verb plural`` since the last reset, minus the benchmark's own."""
        return apicount.operator_by_verb_resource(self.counters().get("items", []), self.own.by_key())

    def by_resource(self, n: int) -> dict[str, float]:
        """Requests per claim by ``verb resource`` (the benchmark's own creates and watches included)."""
        items = self.counters().get("items", [])
        merged: collections.Counter[str] = collections.Counter()
        for item in items:
            merged[f"{item['verb']} {item['resource']}"] += item["count"]
        return {k: round(v / n, 2) for k, v in merged.most_common()}

    def wait_idle(self, quiet: float = 2.0, verbs: tuple[str, ...] | None = WRITE_VERBS,
                  timeout: float = 900.0) -> float:
        """Wait until no API request of ``verbs`` (None = any) for ``quiet`` s; returns when the last one was seen.

        The benchmark's own requests count too, so no watch or poll of ours may run meanwhile."""
        def count() -> int:  # the watcher's Lease renewals are background noise, not work
            return sum(item["count"] for item in self.counters().get("items", [])
                       if (verbs is None or item["verb"] in verbs) and not item["resource"].startswith("leases"))

        began = time.monotonic()
        last, since = None, began
        while time.monotonic() - since < quiet:
            if time.monotonic() - began > timeout:
                raise TimeoutError("the system did not become idle")
            value = count()
            if value != last:
                last, since = value, time.monotonic()
            time.sleep(0.1)
        return since

    # --- watches -------------------------------------------------------------------------------------------

    def _watch(self, api: str, kind: str, plural: str, ns: str, on_event: Callable[[str, dict], None],
               ready: threading.Event, stop: threading.Event) -> None:
        """List-then-watch in a thread; every event goes to ``on_event`` as soon as it is read."""
        while not stop.is_set():
            try:
                self.own.add("list", plural)
                items, version = self.kube.list_with_version(api, kind, ns)
                for item in items:
                    on_event("ADDED", item)
                ready.set()
                while not stop.is_set():
                    self.own.add("watch", plural)
                    for event in self.kube.watch(api, kind, ns, resource_version=version, timeout_seconds=5):
                        obj = event.get("object") or {}
                        version = (obj.get("metadata") or {}).get("resourceVersion") or version
                        if event.get("type") != "BOOKMARK":
                            on_event(event["type"], obj)
                        if stop.is_set():
                            break
            except Exception:
                time.sleep(0.1)

    def start_watch(self, kind: str, ns: str, on_event: Callable[[str, dict], None],
                    api: str = API) -> threading.Event:
        ready, stop = threading.Event(), threading.Event()
        args = (api, kind, self.plural(api, kind), ns, on_event, ready, stop)
        threading.Thread(target=self._watch, args=args, daemon=True).start()
        if not ready.wait(30):
            raise TimeoutError(f"watch on {kind} did not start")
        self._stops.append(stop)
        return stop

    # --- workload steps ------------------------------------------------------------------------------------

    def fill_pool(self, n: int) -> float:
        """Create the pool; wait for N unbound handles whose resource exists, then for the system to go idle."""
        began = time.monotonic()
        self.create(self.workload.pool(n))
        census = HandleCensus()
        ready: set[str] = set()

        def on_handle(event_type: str, obj: dict) -> None:
            census.observe(event_type, obj)
            refs = [r for r in (obj.get("status") or {}).get("resources") or [] if r.get("reference")]
            if refs and obj["metadata"]["name"] in census.unbound:
                ready.add(obj["metadata"]["name"])

        stop = self.start_watch("ResourceHandle", OPERATOR_NS, on_handle)
        try:
            self.wait(lambda: len(ready) >= n, 900, f"{n} pool handles with resources", interval=0.1)
            took = time.monotonic() - began
        finally:
            stop.set()
        self.wait_idle()
        return took

    def run_claims(self, names: list[str], rate: float | None, timeout: float,
                   creators: int = 1) -> tuple[ClaimClock, float, float]:
        """Create the claims (as fast as possible from ``creators`` threads, or at ``rate``/s from one); returns
        the clock, start and create time."""
        clock = ClaimClock()
        stop = self.start_watch("ResourceClaim", CLAIM_NS, lambda _t, obj: clock.observe(obj))

        def create(name: str) -> None:
            clock.created[name] = time.monotonic()
            self.create(self.workload.claim(name))

        start, created = issue(names, create, rate, creators)
        try:
            self.wait(lambda: clock.done(names), timeout, "all claims bound with state", interval=0.02)
        finally:
            stop.set()
        return clock, start, created

    def delete_claims(self, names: list[str], timeout: float, creators: int = 1) -> dict[str, Any]:
        """Delete the claims (as fast as ``creators`` threads can); wait until every claim, handle and managed
        BenchItem is gone. Returns when each went, from the first delete."""
        clock = GoneClock()
        watched = (("ResourceClaim", CLAIM_NS, API), ("ResourceHandle", OPERATOR_NS, API),
                   ("BenchItem", CLAIM_NS, ITEM_API))
        stops = [self.start_watch(kind, ns, clock.observer(kind), api) for kind, ns, api in watched]
        asked: dict[str, float] = {}

        def delete(name: str) -> None:
            asked[name] = time.monotonic()
            self.own.add("delete", "resourceclaims")
            self.kube.delete(API, "ResourceClaim", name, CLAIM_NS)

        start, deleted = issue(names, delete, None, creators)
        try:
            self.wait(clock.empty, timeout, "every claim, handle and resource gone", interval=0.02)
        finally:
            for stop in stops:
                stop.set()
        return {"n": len(names), "delete_s": round(deleted, 3), "all_gone_s": round(clock.last - start, 3),
                "claims_gone_s": round(max(clock.gone[name] for name in names) - start, 3),
                "delete_to_gone": percentiles([clock.gone[name] - asked[name] for name in names])}

    # --- components ----------------------------------------------------------------------------------------

    def pids(self) -> dict[str, int]:
        """Component -> root pid: devcluster, redis, watcher, workers, beat (project) or devcluster, kopf."""
        return self.stack.pids()

    def wait_drained(self, timeout: float = 900.0) -> None:
        """Until no reconcile is queued, running or due within seconds (the broker's queue lists empty, no lease
        held, nothing in the delaying queue about to be released), then until the API is quiet again: runs that
        write nothing do not show in :meth:`wait_idle`. Project only."""
        if self.redis is None:
            return

        def drained() -> bool:
            busy = self.redis.zcard(keyspace.LEASES) + self.redis.zcount(keyspace.DUE, "-inf", time.time() + 2)
            for queue in CONSUME_ORDER:
                busy += sum(self.redis.llen(f"{queue}{suffix}") for suffix in ("", "\x06\x163", "\x06\x166",
                                                                              "\x06\x169"))
            return busy == 0

        self.wait(drained, timeout, "no reconcile queued or running", interval=0.5)
        self.wait_idle(quiet=3.0)

    def redis_commands(self) -> collections.Counter[str]:
        return redisops.snapshot(self.redis) if self.redis is not None else collections.Counter()

    def redis_memory_mib(self) -> float | None:
        return round(rediscache.used_memory(self.redis) / 2**20, 1) if self.redis is not None else None


def issue(names: list[str], action: Callable[[str], None], rate: float | None, creators: int) -> tuple[float, float]:
    """``action`` for every name: as fast as ``creators`` threads can, or at ``rate``/s from one; returns the start
    and how long it took."""
    start = time.monotonic()
    if creators > 1 and not rate:
        with ThreadPoolExecutor(creators) as executor:
            list(executor.map(action, names))
    else:
        for index, name in enumerate(names):
            if rate:
                delay = start + index / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            action(name)
    return start, time.monotonic() - start


# --- one measured phase (counters, CPU, optional profile) ----------------------------------------------------------


#: how long a burst's end waits for the writes to stop (the pool refilled) before it takes the figures as they are
SETTLE_TIMEOUT = 180.0
#: the control plane's processes whose CPU is the API server's cost of a claim (the controller manager's is not)
CONTROL_PLANE_CPU = ("kube-apiserver", "etcd")
#: the two ends of a burst's accounting: all claims bound with state mirrored, and idle again (pool refilled)
WITHOUT, WITH = "without_replenishment", "with_replenishment"


class Mark(NamedTuple):
    """What the operator did from the start of a phase to one of its ends."""

    requests: collections.Counter[str]  # API requests by "verb plural"
    cpu: dict[str, float]  # CPU seconds per component so far (absolute: subtract the phase's start)
    commands: collections.Counter[str]  # Redis commands so far (absolute)
    served: apimetrics.Snapshot | None  # the real API server's own counters so far (absolute; None on devcluster)
    work: collections.Counter[str]  # the project's runs by controller and work queue outcomes so far (absolute)


class Phase:
    """Reset counters and snapshot CPU at the start; optionally py-spy the workers during the phase.

    Requests, CPU and Redis commands are read twice: when every claim is bound with its state mirrored
    (:meth:`run_claims`: "without replenishment") and when the system is idle again, the pool refilled
    (:meth:`finish`: "with")."""

    def __init__(self, bench: Bench, profile_dir: Path | None, label: str, purposes: bool = False) -> None:
        self.bench = bench
        self.pids = bench.pids()
        bench.reset_counters()
        self.cpu = procstats.snapshot(self.pids)
        self.commands = bench.redis_commands()
        self.served = bench.served()
        self.work = bench.operator_work()
        self.marks: dict[str, Mark] = {}
        log = os.environ.get("POOLBOY_BENCH_MONITOR_LOG")  # every command, raw, for reading one claim's story
        self.monitor = redispurpose.Monitor(bench.stack.direct_redis_url, Path(log) if log else None) \
            if purposes and bench.stack.direct_redis_url else None
        self.purposes: dict[str, collections.Counter[str]] = {}
        self.purpose_detail: dict[str, collections.Counter[str]] = {}
        self.recorder: pyspy.Recorder | None = None
        if profile_dir is not None and pyspy.Recorder.available():
            self.recorder = pyspy.Recorder(profile_dir / label)
            for name, pid in self.pids.items():
                if name.startswith("worker") or name in ("watcher", "devcluster"):
                    self.recorder.start(name, pid)

    def mark(self, label: str) -> None:
        """Operator requests by verb and resource since the start of the phase; CPU and Redis commands so far."""
        self.marks[label] = Mark(self.bench.operator_by_verb_resource(), procstats.snapshot(self.pids),
                                 self.bench.redis_commands(), self.bench.served(), self.bench.operator_work())
        if self.monitor is not None:
            self.purposes[label] = self.monitor.counts()
            self.purpose_detail[label] = self.monitor.detail()

    def run_claims(self, names: list[str], rate: float | None, timeout: float,
                   creators: int = 1) -> tuple[ClaimClock, float, float]:
        """:meth:`Bench.run_claims`, marking the "without replenishment" end as soon as all are bound with state."""
        outcome = self.bench.run_claims(names, rate, timeout, creators)
        self.mark(WITHOUT)
        return outcome

    def cpu_ms_per_claim(self, after: dict[str, float], n: int) -> dict[str, float]:
        per = {name: round((after.get(name, 0.0) - self.cpu.get(name, 0.0)) * 1000 / n, 2) for name in self.pids}
        return {**per, "operator": round(sum(v for k, v in per.items() if procstats.is_operator(k)), 2)}

    def control_plane(self, mark: Mark, n: int) -> dict[str, Any]:
        """What the API server and etcd served and spent from the start of the phase to ``mark``, per claim."""
        assert self.served is not None and mark.served is not None
        per_component = self.cpu_ms_per_claim(mark.cpu, n)
        cpu = {name: per_component.get(name, 0.0) for name in CONTROL_PLANE_CPU}
        return {"cpu_ms_per_claim": {**cpu, "total": round(sum(cpu.values()), 2)},
                **apimetrics.delta(self.served, mark.served, n)}

    def finish(self, n: int) -> dict[str, Any]:
        bench = self.bench
        result: dict[str, Any] = {}
        try:
            bench.wait_idle(timeout=SETTLE_TIMEOUT)
        except TimeoutError:  # a system that keeps writing once every claim is bound: its figures, marked so
            result["never_idle"] = f"writes went on for {SETTLE_TIMEOUT:.0f} s after every claim was bound"
        self.mark(WITH)
        result["api_requests_by_verb_resource"] = {
            label: apicount.per_claim(mark.requests, n) for label, mark in self.marks.items()}
        result["cpu_ms_per_claim"] = {label: self.cpu_ms_per_claim(mark.cpu, n) for label, mark in self.marks.items()}
        if bench.redis is not None:
            result["redis_commands_per_claim"] = {
                label: redisops.per_claim(self.commands, mark.commands, n) for label, mark in self.marks.items()}
        if self.monitor is not None:
            self.monitor.close()
            result["redis_commands_by_purpose"] = {
                label: redispurpose.per_claim(counts, n) for label, counts in self.purposes.items()}
            result["redis_commands_by_purpose_command_key"] = {
                label: redispurpose.per_claim(counts, n) for label, counts in self.purpose_detail.items()}
        if self.work:
            result["operator_work_per_claim"] = {
                label: operator_metrics.per_claim(self.work, mark.work, n) for label, mark in self.marks.items()}
        if self.served is not None:
            result["control_plane"] = {label: self.control_plane(mark, n) for label, mark in self.marks.items()}
        cpu = result["operator_cpu_s"] = {
            label: round(sum(mark.cpu.get(k, 0.0) - self.cpu.get(k, 0.0) for k in self.pids
                             if procstats.is_operator(k)), 2) for label, mark in self.marks.items()}
        if WITH in cpu and WITHOUT in cpu:
            cpu["replenishment"] = round(cpu[WITH] - cpu[WITHOUT], 2)
        requests = bench.operator_requests()
        result["api_requests_per_claim"] = {
            "total": round(sum(requests.values()) / n, 2), **{k: round(v / n, 2) for k, v in requests.items()}}
        result["api_requests_by_resource"] = bench.by_resource(n)
        result["components"] = procstats.report(self.pids, self.cpu)
        result["operator_pss_mib"] = procstats.operator_sum(result["components"], "pss_mib")
        result["redis_used_memory_mib"] = bench.redis_memory_mib()
        if self.recorder is not None:
            outputs = self.recorder.stop()
            result["profiles"] = {name: str(path) for name, path in outputs.items()}
        return result


def summarise(clock: ClaimClock, start: float, created_s: float) -> dict[str, Any]:
    bound = [clock.bound[k] - clock.created[k] for k in clock.created if k in clock.bound]
    state = [clock.state[k] - clock.created[k] for k in clock.created if k in clock.state]
    n = len(clock.created)  # the claims this burst created (a watch also lists those there before)
    all_bound = max(clock.bound[k] for k in clock.created) - start
    return {
        "n": n, "create_s": round(created_s, 3), "all_bound_s": round(all_bound, 3),
        "all_state_s": round(max(clock.state[k] for k in clock.created) - start, 3),
        "throughput_per_s": round(n / all_bound, 1) if all_bound > 0 else None,
        "create_to_bound": percentiles(bound), "create_to_state": percentiles(state),
        # every claim's create→bound, for the distributions benchmarks.plots draws
        "create_to_bound_samples": sorted(round(value, 3) for value in bound),
    }


def task_events_env(args: argparse.Namespace) -> dict[str, str]:
    """``--task-events on|off``: whether workers send Celery task events and heartbeats (what Flower shows)."""
    return {"POOLBOY_TASK_EVENTS": "true" if args.task_events == "on" else "false"}


def open_system(args: argparse.Namespace, workers: int, latency_ms: float = 0.0,
                options: StackOptions | None = None, redis_latency_ms: float | None = None) -> Stack:
    """The system under test (``args.system``), not yet started: ``with open_system(...) as stack``. The project
    gets ``workers`` processes (or ``options``) and, with ``--redis-latency-ms``, its Redis behind the latency
    proxy; upstream is one process whatever ``workers`` says. ``latency_ms`` is added to every API request."""
    log_dir = Path(args.log_dir) / f"{args.system}-w{workers}-{time.strftime('%H%M%S')}" if args.log_dir else None
    if args.system == "upstream":
        return UpstreamStack(api_latency_ms=latency_ms, log_dir=log_dir, cluster=args.cluster)
    options = options or StackOptions(workers=workers, concurrency=args.concurrency, pool=args.pool,
                                      api_latency_ms=latency_ms, env=task_events_env(args), log_dir=log_dir,
                                      cluster=args.cluster, metrics_port=operator_metrics.free_port_run(workers + 1))
    return ProjectStack(options, redis_latency_ms=args.redis_latency_ms if redis_latency_ms is None
                        else redis_latency_ms)


def concurrency_of(args: argparse.Namespace, workers: int) -> int:
    """Reconciles at once per worker: ``--concurrency``, or what ``poolboy dev`` chooses for ``workers``."""
    return int(args.concurrency or local_concurrency(workers, pool=args.pool))


def project_only(args: argparse.Namespace, mode: str) -> None:
    if args.system != "project":
        raise SystemExit(f"{mode} runs on the project only (it needs the project's components or Redis)")


def creators(args: argparse.Namespace, latency_ms: float) -> int:
    """Claim-creating threads: one, as always, unless the API is slowed down: then one client creating 300 claims
    one after the other would take 300 round trips, and the burst would measure the client instead of the
    operator (many users create claims at once on a real cluster)."""
    return args.create_threads or (1 if not latency_ms else AUTO_CREATORS)


def at_rest(bench: Bench, seconds: float, objects: int) -> dict[str, Any]:
    """The operator's API requests, CPU and Redis commands over ``seconds`` in which nothing changes (``objects``:
    the claims, handles and managed resources there are, for the per-10 000 figure); on the real control plane
    also the API server's and etcd's CPU and what the API server served to every client."""
    bench.reset_counters()
    pids = bench.pids()
    cpu_before, commands_before, served_before = procstats.snapshot(pids), bench.redis_commands(), bench.served()
    time.sleep(seconds)
    requests = bench.operator_requests()
    cpu = {name: round(value - cpu_before.get(name, 0.0), 2) for name, value in procstats.snapshot(pids).items()}
    commands = bench.redis_commands() - commands_before
    served_after = bench.served()
    total = sum(requests.values())
    operator_cpu = round(sum(v for k, v in cpu.items() if procstats.is_operator(k)), 2)
    result: dict[str, Any] = {
        "objects": objects, "seconds": seconds, "requests": requests, "cpu_s": cpu, "operator_cpu_s": operator_cpu,
        "operator_cpu_s_per_minute": round(operator_cpu * 60 / seconds, 2),
        "redis_commands_per_s": round(sum(commands.values()) / seconds, 2) if bench.redis is not None else None,
        "requests_per_s": round(total / seconds, 3),
        "requests_per_s_per_10k_objects": round(total / seconds * 10_000 / objects, 3),
        "by_verb_resource": dict(bench.operator_by_verb_resource())}
    if served_before is not None and served_after is not None:
        served = apimetrics.delta(served_before, served_after)
        result["control_plane"] = {
            "cpu_s": {name: cpu.get(name, 0.0) for name in CONTROL_PLANE_CPU},
            "served_requests_per_s": round(served["requests_per_claim"]["total"] / seconds, 3), **served}
    return result

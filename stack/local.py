"""The whole system on one machine: devcluster, Redis, watcher, workers, beat and (optionally) Flower.

``LocalStack`` is what ``poolboy dev`` runs, what the end-to-end tests start, and what the benchmarks measure,
so all three exercise exactly the same processes. Every component is a real subprocess launched through the
``poolboy`` CLI with one shared environment.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procutil import InTemporaryDirectory
from stack import forked, ports
from stack.processes import Child, ComponentExited, rotate_logs
from stack.worker import DEFAULT_POOL, local_concurrency
from workers.names import DEFAULT_QUEUES

if TYPE_CHECKING:
    from stack.prometheus import Prometheus
    from stack.service_accounts import ServiceAccountIdentities

#: what the examples' providers create
CONFIGMAPS = {"apiGroups": [""], "resources": ["configmaps"]}


@dataclass
class StackOptions:
    workers: int = 1
    #: reconciles at once per worker; None: :func:`stack.worker.local_concurrency` of ``workers``
    concurrency: int | None = None
    #: Celery execution pool of every worker (``threads``, ``prefork``, ``solo``; see ``poolboy worker --pool``)
    pool: str = DEFAULT_POOL
    namespace: str = "poolboy"
    kubeconfig: Path | None = None
    redis_url: str | None = None
    #: per component (``watcher``, ``worker``, ``beat``, ``flower``): its own ``POOLBOY_REDIS_URL``, e.g. with the
    #: Redis ACL user the chart gives it (``helm/files/redis-acl.conf``); the others use ``redis_url``
    redis_urls: dict[str, str] = field(default_factory=dict)
    use_current_context: bool = False
    flower_port: int | None = None
    #: Prometheus metrics: the watcher on this port, worker i on port + 1 + i, all on 127.0.0.1 (None: from
    #: $POOLBOY_METRICS_PORT, 0 = off; :data:`stack.ports.ANY`: a free port each); likewise $POOLBOY_HEALTH_PORT for
    #: /healthz of watcher, workers and beat
    metrics_port: int | None = None
    #: a Prometheus on this port of 127.0.0.1 scraping every component and Flower, with Poolboy's rules
    #: (:mod:`stack.prometheus`; None or 0: none)
    prometheus_port: int | None = None
    #: its configuration and data (None: a temporary directory of the stack)
    prometheus_dir: Path | None = None
    #: how often it scrapes and evaluates its rules, seconds
    prometheus_interval: float = 5.0
    #: devcluster's port on 127.0.0.1 (0: a free one)
    api_port: int = 0
    #: the API server started for the stack: ``devcluster`` (in memory, starts in under a second) or ``real``
    #: (etcd, kube-apiserver and kube-controller-manager, :mod:`controlplane`); ignored with ``use_current_context``
    cluster: str = "devcluster"
    log_dir: Path | None = None
    #: extra POOLBOY_* (or any) environment for every component, e.g. short intervals in tests
    env: dict[str, str] = field(default_factory=dict)
    ready_timeout: float = 60.0
    #: latency added to every API request except watches (``devcluster.faults``; on the real cluster, by its fault
    #: proxy), so the stack behaves as if the API server were a network round trip away (benchmarks)
    api_latency_ms: float = 0.0
    #: the real cluster only: every client goes through its fault proxy, so that ``stack.cluster.set_faults``
    #: works there as on devcluster (devcluster injects faults itself)
    api_faults: bool = False
    #: the real cluster only: the chart's RBAC is installed and every component runs as its own ServiceAccount,
    #: with a mounted token as in a pod (:mod:`stack.service_accounts`); the admin kubeconfig is the user's
    service_accounts: bool = False
    #: with ``service_accounts``: the chart's ``managedResources``, the kinds the stack's providers may create
    managed_resources: list[dict[str, Any]] = field(default_factory=lambda: [dict(CONFIGMAPS)])


class LocalStack(InTemporaryDirectory):
    """``with LocalStack(StackOptions(workers=2)) as stack: stack.kubeconfig, stack.redis_url``."""

    def __init__(self, options: StackOptions | None = None) -> None:
        self.options = options or StackOptions()
        self._tmp = tempfile.TemporaryDirectory(prefix="poolboy-stack-")
        self.log_dir = Path(self.options.log_dir or self._tmp.name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.cluster = None
        self.identities: ServiceAccountIdentities | None = None
        self.redis = None
        self.prometheus: Prometheus | None = None
        self.children: list[Child] = []
        self.kubeconfig: Path = Path(self.options.kubeconfig or Path(self._tmp.name) / "kubeconfig")
        self.redis_url: str = ""
        self.api_url: str = ""
        self.env: dict[str, str] = {}
        #: per component: its own POOLBOY_METRICS_PORT / POOLBOY_HEALTH_PORT (no two of them share a port), and
        #: Flower's FLOWER_UNAUTHENTICATED_API
        self.component_env: dict[str, dict[str, str]] = {}
        #: component name -> its metrics URL (empty with metrics off)
        self.metrics_urls: dict[str, str] = {}
        #: the /readyz of the watcher and of every worker: the stack is ready once the watcher leads and has listed
        #: (or stands by) and every worker consumes
        self.readyz: dict[str, str] = {}

    # --- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> LocalStack:
        """Start every part; raise :class:`ports.PortTaken` before starting anything if a port is in use (and
        :class:`stack.prometheus.PrometheusUnavailable` if Prometheus is asked for and missing), and
        :class:`ComponentExited` (naming the component and its last log lines) if one dies while starting."""
        if self.options.prometheus_port:
            from stack import prometheus

            prometheus.binary()  # a missing binary is said before anything starts
        self._plan_ports()
        rotate_logs(self.log_dir)
        forked.warm_up()  # the fork server imports the components' libraries meanwhile too (stack/forked.py)
        try:
            self._launch_prometheus()
            self._start_api()
            self._start_redis()
            self.env = self._component_env()
            self._ensure_namespace()
            self._start_identities()
            self._start_components()
            forked.release()  # every component is forked: an idle fork server only holds memory
            self._wait_ready()
            if self.prometheus is not None:
                self.prometheus.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        forked.release()  # a start that failed while forking leaves it running
        if self.prometheus is not None:
            self.prometheus.stop()
            self.prometheus = None
        for child in reversed(self.children):
            child.stop()
        self.children.clear()
        if self.identities is not None:
            self.identities.stop()
            self.identities = None
        if self.redis is not None:
            self.redis.stop()
            self.redis = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    # --- parts ---------------------------------------------------------------------------------------------

    def _domain(self) -> str:
        from poolboy import DEFAULT_DOMAIN

        return self.options.env.get("POOLBOY_DOMAIN") or os.environ.get("POOLBOY_DOMAIN") or DEFAULT_DOMAIN

    def _crd_dir(self) -> Path:
        """CRDs for the configured domain (the files in helm/crds are rendered for the default one)."""
        from stack.crds import write_crds

        directory = Path(self._tmp.name) / "crds"
        write_crds(self._domain(), directory)
        return directory

    def _start_api(self) -> None:
        if self.options.use_current_context:
            if self.options.api_latency_ms:
                raise ValueError("api_latency_ms needs devcluster; it cannot be injected into the current context")
            self.kubeconfig = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
            self._apply_crds()
            return
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        if self.options.cluster == "real":
            self._start_control_plane()
            return
        from devcluster.process import DevCluster

        self.cluster = DevCluster(crds=[self._crd_dir()], kubeconfig=self.kubeconfig, port=self.options.api_port,
                                  log_path=self.log_dir / "devcluster.log").start()
        self.api_url = self.cluster.url
        if self.options.api_latency_ms:
            self.cluster.set_faults(latency_ms=self.options.api_latency_ms)

    def _start_control_plane(self) -> None:
        from controlplane import ControlPlane

        proxied = bool(self.options.api_faults or self.options.api_latency_ms)
        self.cluster = ControlPlane(crds=[self._crd_dir()], kubeconfig=self.kubeconfig, port=self.options.api_port,
                                    log_dir=self.log_dir / "control-plane", fault_proxy=proxied).start()
        self.api_url = self.cluster.url
        if self.options.api_latency_ms:
            self.cluster.set_faults(latency_ms=self.options.api_latency_ms)

    def _start_identities(self) -> None:
        if not self.options.service_accounts:
            return
        if self.options.cluster != "real" or self.options.use_current_context:
            raise ValueError("service_accounts needs the real control plane (cluster='real'): devcluster has no "
                             "authorization")
        from stack.service_accounts import ServiceAccountIdentities

        self.identities = ServiceAccountIdentities(
            self.cluster, self.options.namespace, self._domain(), Path(self._tmp.name) / "serviceaccounts",
            self.options.managed_resources).start()

    def _identity_env(self, name: str) -> dict[str, str]:
        """A component's own identities (``worker-1`` is a worker): its ServiceAccount, when the stack runs as
        ServiceAccounts, and its own Redis URL, when it has one."""
        component = name.split("-")[0]
        env = {} if self.identities is None else self.identities.env(component)
        if component in self.options.redis_urls:
            env["POOLBOY_REDIS_URL"] = self.options.redis_urls[component]
        return env

    def _apply_crds(self) -> None:
        """Install or update the CRDs in an existing cluster (``--use-current-context``)."""
        from poolboy.kube import AlreadyExists, KubeClient
        from stack.crds import load_crds

        kube = KubeClient.from_settings(kubeconfig=str(self.kubeconfig))
        for crd in load_crds(self._domain()):
            try:
                kube.create(crd)
            except AlreadyExists:
                live = kube.get(crd["apiVersion"], crd["kind"], crd["metadata"]["name"])
                crd["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
                kube.replace(crd)

    def _start_redis(self) -> None:
        if self.options.redis_url:
            self.redis_url = self.options.redis_url
            return
        from stack.redis_server import RedisServer

        self.redis = RedisServer().start()
        self.redis_url = self.redis.url

    def _component_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "KUBECONFIG": str(self.kubeconfig),
            "POOLBOY_REDIS_URL": self.redis_url,
            "POOLBOY_NAMESPACE": self.options.namespace,
            "POOLBOY_DOMAIN": self._domain(),
            "PYTHONUNBUFFERED": "1",
        })
        env.update(self.options.env)
        # one port per component (_plan_ports), never this shared value; metrics on loopback only; every worker
        # gets its own multiprocess directory (a shared one would be emptied by the next worker to start)
        env.update({"POOLBOY_METRICS_PORT": "0", "POOLBOY_HEALTH_PORT": "0", "POOLBOY_METRICS_ADDRESS": "127.0.0.1"})
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        return env

    def _component_names(self) -> list[str]:
        return ["watcher", *(f"worker-{i}" for i in range(self.options.workers)), "beat"]

    @staticmethod
    def _awaited(names: list[str]) -> list[str]:
        """The components the ready line waits for: the watcher and the workers (beat only schedules sweeps)."""
        return [name for name in names if name != "beat"]

    def _plan_ports(self) -> None:
        """Give metrics and health ports to components (base, base + 1, …) and check every fixed port is free."""
        environ = {**os.environ, **self.options.env}
        metrics_base = self.options.metrics_port
        if metrics_base is None:
            metrics_base = int(environ.get("POOLBOY_METRICS_PORT") or 0)
        health_base = int(environ.get("POOLBOY_HEALTH_PORT") or 0)
        names = self._component_names()
        served = names[:-1]  # beat serves no metrics
        if metrics_base == ports.ANY:
            metrics = {name: ports.free() for name in served}
        else:
            metrics = ports.consecutive(metrics_base, served) if metrics_base else {}
        health = ports.consecutive(health_base, names) if health_base else {}
        wanted = [ports.PortRequest(port, f"{name} metrics", "--metrics-port") for name, port in metrics.items()]
        wanted += [ports.PortRequest(port, f"{name} health", "POOLBOY_HEALTH_PORT") for name, port in health.items()]
        for name in self._awaited(names):  # their /readyz is how the stack knows they watch and consume
            health.setdefault(name, ports.free())
        if self.options.flower_port:
            wanted.append(ports.PortRequest(self.options.flower_port, "Flower", "--flower-port (0 disables Flower)"))
        if self.options.prometheus_port:
            wanted.append(ports.PortRequest(self.options.prometheus_port, "Prometheus",
                                            "--prometheus-port (0: no Prometheus)"))
        if self.options.api_port and not self.options.use_current_context:
            wanted.append(ports.PortRequest(self.options.api_port, "the API server", "--api-port (0 picks a free one)"))
        ports.check(wanted)
        for name in names:
            own = self.component_env.setdefault(name, {})
            if name in metrics:
                own["POOLBOY_METRICS_PORT"] = str(metrics[name])
            if name in health:
                own["POOLBOY_HEALTH_PORT"] = str(health[name])
        self.metrics_urls = {name: f"http://{ports.LOOPBACK}:{port}/metrics" for name, port in metrics.items()}
        self.readyz = {name: f"http://{ports.LOOPBACK}:{health[name]}/readyz" for name in self._awaited(names)}
        # Flower listens on loopback only, its pages (with their control buttons) are open there anyway: open its
        # /api/* too unless the user chose basic auth or set the variable
        self.component_env["flower"] = {"FLOWER_UNAUTHENTICATED_API": environ.get("FLOWER_UNAUTHENTICATED_API", "true")}

    def scrape_targets(self) -> dict[str, str]:
        """Every metrics URL of the stack: each component's, and Flower's."""
        targets = dict(self.metrics_urls)
        if self.options.flower_port:
            targets["flower"] = f"http://{ports.LOOPBACK}:{self.options.flower_port}/metrics"
        return targets

    def _launch_prometheus(self) -> None:
        """Start Prometheus first: its targets are known once the ports are planned, and it loads meanwhile."""
        if not self.options.prometheus_port:
            return
        from stack.prometheus import Prometheus

        self.prometheus = Prometheus(self.options.prometheus_port,
                                     self.options.prometheus_dir or Path(self._tmp.name) / "prometheus",
                                     self.log_dir / "prometheus.log", self.scrape_targets(), self.options.namespace,
                                     scrape_interval=self.options.prometheus_interval).launch()

    def _ensure_namespace(self) -> None:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.options.namespace}}
        if self.cluster is not None:  # our devcluster: one plain request, no Kubernetes client to load first
            try:
                self.cluster.request("POST", "/api/v1/namespaces", namespace)
            except urllib.error.HTTPError as error:
                if error.code != 409:
                    raise
            return
        from poolboy.kube import AlreadyExists, KubeClient

        kube = KubeClient.from_settings(kubeconfig=str(self.kubeconfig))
        with contextlib.suppress(AlreadyExists):
            kube.create(namespace)

    def add(self, name: str, *argv: str) -> Child:
        """Start one more component (e.g. a second beat): ``poolboy <argv>`` with the stack's environment (and its
        own ports, for the components :meth:`_plan_ports` planned)."""
        env = {**self.env, **self.component_env.get(name, {}), **self._identity_env(name)}
        child = Child(name, argv, env, self.log_dir).start()
        self.children.append(child)
        return child

    def restart(self, name: str, sig: int | None = None, env: dict[str, str] | None = None) -> Child:
        """Stop a component (SIGTERM and its grace, or ``sig`` such as SIGKILL at once) and start it again, with
        ``env`` added to its environment from then on."""
        old = self.child(name)
        if sig is None:
            old.stop(timeout=30.0)
        else:
            old.signal(sig)
            if old.process is not None:
                old.process.wait(10)
        new = Child(name, old.argv, {**old.env, **(env or {})}, self.log_dir).start()
        forked.release()
        self.children[self.children.index(old)] = new
        return new

    def _start_components(self) -> None:
        add = self.add
        # a stable Lease identity: the watcher restarted after a crash takes its own Lease back at once (as a
        # restarted container of the same pod does), instead of waiting out the dead process's Lease
        add("watcher", "watcher", "--identity", f"{socket.gethostname()}-watcher")
        for index in range(self.options.workers):
            add(f"worker-{index}", "worker", "--queues", DEFAULT_QUEUES,
                "--concurrency", str(self.concurrency), "--pool", self.options.pool,
                "--hostname", f"worker{index}@%h")
        add("beat", "beat")
        if self.options.flower_port:
            add("flower", "flower", "--port", str(self.options.flower_port), "--address", "127.0.0.1")

    @property
    def concurrency(self) -> int:
        """Reconciles at once per worker: the option, or the local default for this many workers."""
        return self.options.concurrency or local_concurrency(self.options.workers, pool=self.options.pool)

    def _wait_ready(self) -> None:
        """Until the watcher is ready (it leads and its informers have listed, or it stands by), every worker
        consumes (its /readyz: the consumer runs, Redis and the API answer), and Flower, if any, answers its health
        check: a user who applies a claim at the ready line has it watched and reconciled. Each probe is a local HTTP
        request, polled every 20 ms (a Celery ping broadcast before a worker subscribed is lost, and waits out its
        timeout)."""
        deadline = time.monotonic() + self.options.ready_timeout
        waiting = dict(self.readyz)
        while time.monotonic() < deadline:
            dead = [c for c in self.children if not c.alive]
            if dead:
                raise ComponentExited(dead[0], "during start-up")
            waiting = {name: url for name, url in waiting.items() if not self._answers_ok(url)}
            if not waiting and self._flower_answering():
                return
            time.sleep(0.02)
        raise RuntimeError(f"the stack did not become ready in time (waiting for {', '.join(waiting) or 'Flower'}); "
                           f"logs in {self.log_dir}")

    def workers_answering(self, limit: int | None = None) -> int:
        """How many workers answer a ping within 0.5 s (at once, when ``limit`` of them have)."""
        from poolboy.settings import Settings
        from workers.broker import probe_app

        probe = probe_app(Settings.from_env(self.env))
        try:
            return len(probe.control.ping(timeout=0.5, limit=limit) or [])
        finally:
            probe.close()

    def _flower_answering(self) -> bool:
        return not self.options.flower_port or \
            self._answers_ok(f"http://{ports.LOOPBACK}:{self.options.flower_port}/healthcheck")

    @staticmethod
    def _answers_ok(url: str) -> bool:
        """The URL answers 2xx within a second (a 503 of a probe not yet passing raises HTTPError, an OSError)."""
        try:
            with urllib.request.urlopen(url, timeout=1):
                return True
        except OSError:
            return False

    # --- conveniences --------------------------------------------------------------------------------------

    def grant(self, entry: dict[str, Any]) -> None:
        """Let the components manage more kinds (an entry of the chart's ``managedResources``), as an administrator
        upgrades the chart; nothing to do when they run as the admin."""
        if self.identities is not None:
            self.identities.grant_managed(entry)

    def denied(self) -> list[str]:
        """The requests of the stack's components that the API server refused for want of a grant."""
        if self.identities is None:
            return []
        prefix = f"system:serviceaccount:{self.options.namespace}:"
        return [str(request) for request in self.cluster.denied() if request.user.startswith(prefix)]

    def child(self, name: str) -> Child:
        return next(c for c in self.children if c.name == name)

    def logs(self) -> str:
        return "\n".join(f"===== {c.name}\n{c.tail()}" for c in self.children)

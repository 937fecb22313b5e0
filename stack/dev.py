"""``poolboy dev``: the whole system on one machine, for trying Poolboy and for end-to-end tests.

Starts devcluster (or, with ``--cluster real``, etcd, kube-apiserver and kube-controller-manager built from their Go
modules; or uses the current kubeconfig context), its own ``redis-server`` (or ``--redis-url``), the
watcher, ``--workers`` worker processes, beat and Flower (with ``--service-accounts``, each as its chart
ServiceAccount: :mod:`stack.service_accounts`), each serving metrics on a loopback port of its own, and with
``--prometheus-port`` a Prometheus scraping them with Poolboy's rules (:mod:`stack.prometheus`); installs the CRDs;
creates the operator namespace;
writes ``--kubeconfig``; prints one line containing ``ready`` when every component is up; stops every child
cleanly on SIGINT/SIGTERM; restarts a component that exits, with backoff (:mod:`stack.supervisor`).
``--demo`` applies ``examples/`` and shows the claim become Ready.

For a newcomer: a port already in use is one line on stderr and exit status 1 before anything starts; each run
starts fresh component logs (the previous run's stay beside them as ``<name>.log.1``); a component that dies while
starting ends the run with its exit status and the last lines of its own log; one that dies later is reported the
same way and restarted.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from stack import log_options
from stack.worker import DEFAULT_CONCURRENCY, DEFAULT_POOL, POOLS

if TYPE_CHECKING:
    from stack.local import LocalStack

DEFAULT_KUBECONFIG = ".poolboy-dev/kubeconfig"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=DEFAULT_KUBECONFIG,
                        help=f"where to write the kubeconfig for kubectl (default {DEFAULT_KUBECONFIG})")
    parser.add_argument("--namespace", default=os.environ.get("POOLBOY_NAMESPACE", "poolboy"),
                        help="operator namespace (default: $POOLBOY_NAMESPACE or 'poolboy')")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--concurrency", type=int, default=None,
                        help=f"reconciles at once per worker (default: about two per core in all, at most "
                             f"{DEFAULT_CONCURRENCY} each; 1 worker on 2 cores: 4)")
    parser.add_argument("--pool", choices=POOLS, default=DEFAULT_POOL,
                        help=f"Celery execution pool of each worker (default {DEFAULT_POOL}; "
                             "see `poolboy worker --help`)")
    parser.add_argument("--redis-url", default=None, help="use this Redis instead of starting redis-server")
    parser.add_argument("--use-current-context", action="store_true",
                        help="use the cluster of the current kubeconfig context instead of starting devcluster")
    parser.add_argument("--flower-port", type=int, default=5555, help="Flower port on 127.0.0.1 (0 disables)")
    metrics = os.environ.get("POOLBOY_METRICS_PORT")
    parser.add_argument("--metrics-port", type=int, default=int(metrics) if metrics else None,
                        help="Prometheus metrics on 127.0.0.1: the watcher on this port, worker i on port + 1 + i "
                             "(default $POOLBOY_METRICS_PORT, else a free port each; 0 = off)")
    parser.add_argument("--prometheus-port", type=int, default=int(os.environ.get("POOLBOY_PROMETHEUS_PORT") or 0),
                        help="start Prometheus on this port of 127.0.0.1, scraping every component and Flower with "
                             "Poolboy's alerting rules (needs the prometheus binary; default "
                             "$POOLBOY_PROMETHEUS_PORT; 0 = none)")
    parser.add_argument("--prometheus-interval", type=float, default=5.0,
                        help="how often that Prometheus scrapes and evaluates its rules, seconds (default 5)")
    parser.add_argument("--cluster", choices=("devcluster", "real", "node"),
                        default=os.environ.get("POOLBOY_DEV_CLUSTER", "devcluster"),
                        help="the API server to start: devcluster (in memory, starts in under a second), real "
                             "(etcd, kube-apiserver and kube-controller-manager, built once from their Go modules; "
                             "ready in 5-10 s), or node: real plus a node (kubelet, containerd, kube-proxy, "
                             "CoreDNS) with the Helm chart installed on it, every component a pod as deployed "
                             "(needs root; about a minute); default $POOLBOY_DEV_CLUSTER or devcluster")
    parser.add_argument("--service-accounts", action="store_true",
                        default=os.environ.get("POOLBOY_DEV_SERVICE_ACCOUNTS") == "1",
                        help="with --cluster real: install the chart's RBAC and run each component as its own "
                             "ServiceAccount with a mounted token, as in a pod (default: "
                             "$POOLBOY_DEV_SERVICE_ACCOUNTS=1); the kubeconfig written for you stays the admin's")
    parser.add_argument("--grant", action="append", default=[], metavar="RESOURCE[.GROUP]",
                        help="with --service-accounts: a kind Poolboy may manage besides ConfigMaps (the examples'), "
                             "e.g. secrets or deployments.apps; repeatable (the chart's managedResources)")
    parser.add_argument("--api-port", type=int, default=0,
                        help="the API server's port on 127.0.0.1 (default 0: a free one)")
    parser.add_argument("--log-dir", default=".poolboy-dev/logs", help="component logs (default .poolboy-dev/logs)")
    log_options.add_arguments(parser)  # passed to every component through the environment
    parser.add_argument("--demo", action="store_true",
                        help="apply examples/ (provider, pool, claim) and show the claim become Ready")


def managed_entry(grant: str) -> dict[str, list[str]]:
    """``deployments.apps`` -> the chart's ``{"apiGroups": ["apps"], "resources": ["deployments"]}``."""
    resource, _, group = grant.partition(".")
    return {"apiGroups": [group], "resources": [resource]}


def run(args: argparse.Namespace) -> int:
    from controlplane import ControlPlaneUnavailable
    from stack import ports
    from stack.local import CONFIGMAPS, LocalStack, StackOptions
    from stack.ports import PortTaken
    from stack.processes import ComponentExited
    from stack.prometheus import PrometheusUnavailable
    from stack.supervisor import Supervisor

    if args.cluster == "node" and not args.use_current_context:
        return run_deployed(args)
    if args.service_accounts and (args.cluster != "real" or args.use_current_context):
        print("poolboy dev: --service-accounts needs --cluster real (devcluster has no authorization)",
              file=sys.stderr, flush=True)
        return 2
    options = StackOptions(
        workers=args.workers, concurrency=args.concurrency, pool=args.pool, namespace=args.namespace,
        kubeconfig=None if args.use_current_context else Path(args.kubeconfig).resolve(),
        redis_url=args.redis_url, use_current_context=args.use_current_context,
        flower_port=args.flower_port or None, api_port=args.api_port,
        metrics_port=ports.ANY if args.metrics_port is None else args.metrics_port,
        prometheus_port=args.prometheus_port or None, prometheus_interval=args.prometheus_interval,
        prometheus_dir=Path(args.log_dir).resolve().parent / "prometheus",
        cluster=args.cluster, service_accounts=args.service_accounts,
        managed_resources=[dict(CONFIGMAPS), *(managed_entry(grant) for grant in args.grant)],
        log_dir=Path(args.log_dir).resolve(),
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        with LocalStack(options) as stack:
            _announce(stack, args)
            if args.demo:
                from stack.demo import run_demo

                run_demo(stack, EXAMPLES, stop)
            else:
                print("  kubectl apply -f examples/   # then: kubectl get rclaim -A", flush=True)
            print("Press Ctrl-C to stop.", flush=True)
            supervisor = Supervisor.for_stack(stack)  # a component that exits is reported and restarted
            while not stop.wait(1.0):
                supervisor.check()
    except (PortTaken, ComponentExited, ControlPlaneUnavailable, PrometheusUnavailable) as error:
        print(f"poolboy dev: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


def run_deployed(args: argparse.Namespace) -> int:
    """``--cluster node``: the chart deployed on a node of this machine (:mod:`stack.deployed`)."""
    from controlplane import ControlPlaneUnavailable
    from stack.deployed import DeployedStack
    from stack.local import CONFIGMAPS

    managed = [dict(CONFIGMAPS), *(managed_entry(grant) for grant in args.grant)]
    values = {"logLevel": args.log_level} if getattr(args, "log_level", None) else {}
    values["flower"] = {"enabled": bool(args.flower_port)}
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print("poolboy dev: starting the control plane, a node and the chart on it (the first run builds the node "
          "and the images: several minutes)", flush=True)
    try:
        with DeployedStack(Path(args.kubeconfig).resolve(), args.namespace, managed, Path(args.log_dir).resolve(),
                           values) as stack:
            took = ", ".join(f"{name} {seconds:.0f}s" for name, seconds in stack.timings.items())
            print(f"poolboy dev ready: the chart deployed on node poolboy-node ({took}); logs in {stack.log_dir}",
                  flush=True)
            print(f"  export KUBECONFIG={stack.kubeconfig}\n  kubectl get pods -n {args.namespace}", flush=True)
            if args.flower_port:
                print(f"  kubectl port-forward -n {args.namespace} svc/poolboy-flower {args.flower_port}:5555  "
                      f"# Flower; its user and password: kubectl get secret -n {args.namespace} "
                      "poolboy-flower-auth -o jsonpath='{.data.auth}' | base64 -d", flush=True)
            if args.demo:
                from stack.demo import run_demo

                run_demo(stack, EXAMPLES, stop)
            else:
                print("  kubectl apply -f examples/   # then: kubectl get rclaim -A", flush=True)
            print("Press Ctrl-C to stop.", flush=True)
            stop.wait()
    except (ControlPlaneUnavailable, RuntimeError) as error:
        print(f"poolboy dev: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


def _announce(stack: LocalStack, args: argparse.Namespace) -> None:
    """The ready line, then where everything is: kubeconfig, Flower, each component's metrics."""
    print(f"poolboy dev ready: API {stack.api_url or 'current context'}, Redis {stack.redis_url}, "
          f"{args.workers} worker(s), logs in {stack.log_dir}", flush=True)
    print(f"  export KUBECONFIG={stack.kubeconfig}", flush=True)
    if stack.identities is not None:
        print(f"  components run as ServiceAccounts {', '.join(stack.identities.accounts())} of namespace "
              f"{args.namespace} (the chart's RBAC); that kubeconfig is the admin's", flush=True)
    if args.flower_port:
        print(f"  Flower: http://127.0.0.1:{args.flower_port}/ (its /api/* open on loopback unless "
              f"FLOWER_BASIC_AUTH=user:password is set)", flush=True)
    for name, url in stack.metrics_urls.items():
        print(f"  metrics of {name}: {url}", flush=True)
    if stack.prometheus is not None:
        print(f"  Prometheus: {stack.prometheus.url}/ scraping {', '.join(stack.scrape_targets())}; alerts at "
              f"{stack.prometheus.url}/alerts (docs/monitoring.md)", flush=True)
    elif stack.metrics_urls:
        print("  Prometheus: add --prometheus-port 9090 to graph these with Poolboy's rules and alerts", flush=True)

"""``poolboy dev``: the whole system on one machine, for trying Poolboy and for end-to-end tests.

Today it starts devcluster with the CRDs loaded, writes a kubeconfig and creates the operator namespace; the
engine components are added as they land. It prints one line containing ``ready`` once everything is up and
stops every child cleanly on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path

DEFAULT_KUBECONFIG = ".poolboy-dev/kubeconfig"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=DEFAULT_KUBECONFIG,
                        help=f"where to write the kubeconfig for kubectl (default {DEFAULT_KUBECONFIG})")
    parser.add_argument("--namespace", default=os.environ.get("POOLBOY_NAMESPACE", "poolboy"),
                        help="operator namespace (default: $POOLBOY_NAMESPACE or 'poolboy')")


def run(args: argparse.Namespace) -> int:
    from devcluster.testing import DEFAULT_CRDS, DevCluster

    kubeconfig = Path(args.kubeconfig).resolve()
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with DevCluster(crds=[DEFAULT_CRDS], kubeconfig=kubeconfig) as cluster:
        cluster.request("POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.namespace}})
        print(f"poolboy dev ready: API server {cluster.url}", flush=True)
        print(f"  export KUBECONFIG={kubeconfig}", flush=True)
        print("  kubectl get crds; kubectl api-resources --api-group=poolboy.gpte.redhat.com", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        stop.wait()
    return 0

"""``python -m controlplane --kubeconfig PATH [--crds DIR_OR_FILE ...]``: start the control plane, print one line
``control plane ready at https://127.0.0.1:<port>``, run until SIGINT/SIGTERM. ``--build`` only builds the binaries
and prints their directory."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from controlplane import ControlPlane, ControlPlaneUnavailable, find_binaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controlplane", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, default=Path("kubeconfig"),
                        help="where to write the admin kubeconfig (default ./kubeconfig)")
    parser.add_argument("--crds", type=Path, action="append", default=[], help="CRD file or directory to install")
    parser.add_argument("--log-dir", type=Path, default=None, help="component logs (default: a temporary directory)")
    parser.add_argument("--build", action="store_true", help="build (or find) the binaries, print where, and exit")
    args = parser.parse_args(argv)
    try:
        if args.build:
            print(find_binaries().kube_apiserver.parent, flush=True)
            return 0
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        with ControlPlane(crds=args.crds, kubeconfig=args.kubeconfig.resolve(), log_dir=args.log_dir) as cluster:
            print(f"control plane ready at {cluster.url}; logs in {cluster.log_dir}", flush=True)
            stop.wait()
    except ControlPlaneUnavailable as error:
        print(f"control plane: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

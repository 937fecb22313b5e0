"""``python -m devcluster``: start the server on loopback, write a kubeconfig, load CRDs, announce readiness.

Logs to stderr: start-up (address, CRDs loaded) and errors always, every request at ``--log-level DEBUG``
(default ``$DEVCLUSTER_LOG_LEVEL`` or INFO). A port already in use is one line and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from devcluster.cluster import Cluster
from devcluster.errors import ApiError
from devcluster.server import Server

log = logging.getLogger("devcluster")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="devcluster", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port (0 = pick a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.add_argument("--kubeconfig", required=True, help="where to write a kubeconfig for this server")
    parser.add_argument("--crds", action="append", default=[], help="CRD YAML file or directory of *.yaml")
    parser.add_argument("--history", type=int, default=10000, help="watch event history size")
    parser.add_argument("--bookmark-interval", type=float, default=1.0, help="seconds between watch BOOKMARKs")
    parser.add_argument("--log-level", default=os.environ.get("DEVCLUSTER_LOG_LEVEL", "INFO"),
                        help="DEBUG logs every request; INFO (default, or $DEVCLUSTER_LOG_LEVEL) start-up and errors")
    return parser.parse_args(argv)


def crd_documents(paths: list[str]) -> list[dict[str, Any]]:
    documents = []
    for entry in paths:
        path = Path(entry)
        files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
        for file in files:
            # libyaml's loader where PyYAML has it (the pure-Python one is most of a start-up's CPU)
            for doc in yaml.load_all(file.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    documents.append(doc)
    return documents


def load_crds(cluster: Cluster, paths: list[str]) -> int:
    """Create the CRDs found in ``paths``; return how many."""
    rtype = cluster.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert rtype is not None
    documents = crd_documents(paths)
    for doc in documents:
        try:
            cluster.create(rtype, "", doc)
        except ApiError as error:
            raise SystemExit(f"devcluster: cannot load CRD {doc.get('metadata', {}).get('name')}: "
                             f"{error.message}") from None
    return len(documents)


def write_kubeconfig(path: str, url: str) -> None:
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": "devcluster", "cluster": {"server": url}}],
        "users": [{"name": "devcluster", "user": {"token": "devcluster-token"}}],
        "contexts": [{"name": "devcluster", "context": {"cluster": "devcluster", "user": "devcluster",
                                                          "namespace": "default"}}],
        "current-context": "devcluster",
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(config, sort_keys=False))


def loopback_socket(host: str, port: int) -> socket.socket:
    address = ipaddress.ip_address(socket.gethostbyname(host))
    if not address.is_loopback:
        raise SystemExit(f"devcluster binds loopback only; {host} is not a loopback address")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((str(address), port))
    except OSError as error:
        sock.close()
        raise SystemExit(f"devcluster: cannot listen on {address}:{port}: {error.strerror}") from None
    sock.listen(1024)
    sock.setblocking(False)
    return sock


async def serve(args: argparse.Namespace) -> None:
    cluster = Cluster(history_size=args.history)
    server = Server(cluster, bookmark_interval=args.bookmark_interval)
    crds = load_crds(cluster, args.crds)
    sock = loopback_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    server.port = port
    # handler_cancellation: a watch whose client disconnected is cancelled at once, so its queue is released.
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False, shutdown_timeout=0.5,
                           handler_cancellation=True)
    await runner.setup()
    site = web.SockSite(runner, sock, shutdown_timeout=0.5)
    await site.start()
    url = f"http://{host}:{port}"
    write_kubeconfig(args.kubeconfig, url)
    # not "ready at <url>": wrappers that read this process's merged output take the first such line for the URL
    log.info("devcluster serving %s (%d CRDs loaded, kubeconfig %s)", url, crds, args.kubeconfig)
    print(f"devcluster ready at {url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("devcluster stopping")
    await runner.cleanup()


#: The API server accepts objects nested thousands of levels deep; the recursive merge, validation and pruning code
#: here needs about two frames per level, so the default limit of 1000 would turn a 500-deep object into a 500.
RECURSION_LIMIT = 10_000


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())

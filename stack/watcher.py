"""``poolboy watcher``: list-then-watch every Poolboy kind and managed resource kind; every event adds a key.

Two replicas may run; a Lease (``POOLBOY_WATCHER_LEASE_NAME``, ``POOLBOY_WATCHER_LEASE_SECONDS``) elects the
active one. Keys go to the gate (Redis) through the Enqueuer; ``--record-keys FILE`` appends them to a file
instead, for tests and for looking at what the watcher sees without Redis or Celery.
"""

from __future__ import annotations

import argparse
import signal
import threading

from stack import log_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="Prometheus metrics port (default: $POOLBOY_METRICS_PORT; 0 disables)")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--identity", default=None, help="leader-election identity (default: host-pid-random)")
    parser.add_argument("--no-leader-election", action="store_true",
                        help="watch at once without taking the Lease (only ever run one such watcher)")
    parser.add_argument("--watch-timeout", type=int, default=300,
                        help="seconds after which each watch stream is renewed (default 300)")
    parser.add_argument("--record-keys", metavar="FILE", default=None,
                        help="append every key to FILE (one per line) instead of adding it to the gate")
    log_options.add_arguments(parser)


def _file_sink(path: str):  # type: ignore[no-untyped-def]
    lock = threading.Lock()
    handle = open(path, "a", buffering=1)  # noqa: SIM115 - open for the life of the process

    def sink(key: str) -> None:
        with lock:
            handle.write(key + "\n")
            handle.flush()

    return sink


def _serve_health(settings, watcher, kube, *, with_redis: bool) -> None:  # type: ignore[no-untyped-def]
    from watcher import health as watcher_health
    from workers import health

    live, ready = watcher_health.probes(watcher, settings.health_stall_seconds)
    dependencies = {"api": health.api_probe(kube)}
    if with_redis:
        dependencies["redis"] = health.redis_probe(settings)
    health.start_for(settings, live, {**dependencies, **ready})


def run(args: argparse.Namespace) -> int:
    from poolboy.kube import KubeClient
    from poolboy.settings import Settings
    from watcher.main import Watcher

    settings = Settings.from_env()
    port = settings.metrics_port if args.metrics_port is None else args.metrics_port
    if port:
        from prometheus_client import start_http_server

        start_http_server(port, addr=settings.metrics_address)
    kube = KubeClient.from_settings(settings, kubeconfig=args.kubeconfig)
    intake = None
    cache = None
    if args.record_keys:
        sink = _file_sink(args.record_keys)
    else:
        from engine.enqueue import Enqueuer, GateIntake
        from engine.own_writes import OwnWrites
        from engine.runtime import work_queue
        from workers.app import app
        from workers.messages import QueuedMessages

        queue = work_queue(settings, QueuedMessages(app).encode)
        enqueuer = Enqueuer(queue, app)
        if settings.read_cache:
            from cache.writer import CacheWriter

            cache = CacheWriter(queue.redis, settings.domain, alive_seconds=settings.cache_alive_seconds)
        intake = GateIntake(enqueuer, OwnWrites(queue), cache)  # cache, own-write check and ADD: one round trip
        sink = enqueuer.add  # the same queue, key by key (not used while the intake delivers)

    watcher = Watcher(settings, kube, sink, identity=args.identity, leader_election=not args.no_leader_election,
                      watch_timeout=args.watch_timeout, intake=intake, cache=cache)
    _serve_health(settings, watcher, kube, with_redis=not args.record_keys)
    from prometheus_client import REGISTRY

    REGISTRY.register(watcher.pool_stats)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: watcher.stop())
    watcher.run()
    return 0

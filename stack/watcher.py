"""``poolboy watcher``: list-then-watch every Poolboy kind and managed resource kind; every event adds a key.

Two replicas may run; a Lease (``POOLBOY_WATCHER_LEASE_NAME``, ``POOLBOY_WATCHER_LEASE_SECONDS``) elects the
active one. Events go to Redis through the work queue's intake (:class:`engine.enqueue.EventIntake`): the read cache,
the own-write check and the work queue's ADD of every key they wake.
"""

from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING

from stack import log_options

if TYPE_CHECKING:
    from cache.writer import CacheWriter
    from engine.enqueue import EventIntake
    from poolboy.kube import KubeClient
    from poolboy.settings import Settings
    from watcher.main import Watcher


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
    log_options.add_arguments(parser)


def _serve_health(settings: Settings, watcher: Watcher, kube: KubeClient) -> None:
    from watcher import health as watcher_health
    from workers import health

    live, ready = watcher_health.probes(watcher, settings.health_stall_seconds)
    dependencies = {"api": health.api_probe(kube), "redis": health.redis_probe(settings)}
    health.start_for(settings, live, {**dependencies, **ready})


def _intake(settings: Settings) -> tuple[EventIntake, CacheWriter | None]:
    """The work queue's intake and the read cache's writer (None without a read cache), on one Redis client."""
    from engine.enqueue import EventIntake
    from engine.own_writes import OwnWrites
    from workers.app import app
    from workers.messages import enqueuer

    publishing = enqueuer(app, settings)
    queue = publishing.queue
    cache = None
    if settings.read_cache:
        from cache.writer import CacheWriter

        cache = CacheWriter(queue.redis, settings.domain, alive_seconds=settings.cache_alive_seconds)
    return EventIntake(publishing, OwnWrites(queue), cache), cache  # cache, own-write check, ADD: one trip


def run(args: argparse.Namespace) -> int:
    from engine.registries import WATCHER, Own, endpoint
    from poolboy.kube import KubeClient
    from poolboy.settings import Settings
    from watcher.main import Watcher

    settings = Settings.from_env()
    port = settings.metrics_port if args.metrics_port is None else args.metrics_port
    if port:
        from prometheus_client import start_http_server

        start_http_server(port, addr=settings.metrics_address, registry=endpoint(Own(WATCHER)))
    kube = KubeClient.from_settings(settings, kubeconfig=args.kubeconfig)
    intake, cache = _intake(settings)
    watcher = Watcher(settings, kube, intake, cache=cache, identity=args.identity,
                      leader_election=not args.no_leader_election, watch_timeout=args.watch_timeout)
    _serve_health(settings, watcher, kube)
    WATCHER.register(watcher.pool_stats)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: watcher.stop())
    watcher.run()
    return 0

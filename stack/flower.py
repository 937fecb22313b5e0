"""``poolboy flower``: Flower against the engine's broker (task throughput, workers, queue lengths).

Flower shows what the workers' task events and heartbeats tell it (on by default, ``POOLBOY_TASK_EVENTS``; their
cost is in ``benchmarks/README.md``). Its ``/api/*`` answers 401 unless ``--basic-auth`` (``FLOWER_BASIC_AUTH``) or
``FLOWER_UNAUTHENTICATED_API=true`` is set, and its ``/metrics`` is unauthenticated even with ``--basic-auth``: bind
it to loopback or keep it behind a cluster-internal Service.

``--remote-control off`` (``POOLBOY_FLOWER_REMOTE_CONTROL=false``; the chart's default) makes Flower a pure monitor:
it sends the workers no command (no wake-up, no ``inspect``, its shutdown and pool buttons do nothing), so its Redis
user needs no PUBLISH on the remote-control channel (``helm/files/redis-acl.conf``). Its worker pages then show what
the heartbeats and task events tell.
"""

from __future__ import annotations

import argparse
import os

from stack import log_options

#: the Tasks page's columns: the task's name (``poolboy.reconcile.<kind>``) and its argument, the work key
#: (``claim/demo/hello``, :mod:`workers.messages`), first; its result is what the run came to (``'success'``,
#: ``'error'``, ``'permanent_error'``, ..., :mod:`engine.outcome`); the uuid, which opens the task, last
TASK_COLUMNS = "name,args,state,result,received,runtime,worker,uuid"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=5555, help="HTTP port (default 5555)")
    parser.add_argument("--address", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--basic-auth", default=os.environ.get("FLOWER_BASIC_AUTH"),
                        help="user:password[,user:password] (default $FLOWER_BASIC_AUTH)")
    parser.add_argument("--url-prefix", default=None, help="serve under this path prefix (behind an ingress)")
    remote = os.environ.get("POOLBOY_FLOWER_REMOTE_CONTROL", "true").lower() not in ("false", "0", "no", "off")
    parser.add_argument("--remote-control", choices=("on", "off"), default="on" if remote else "off",
                        help="inspect and command the workers (default $POOLBOY_FLOWER_REMOTE_CONTROL, on); off: "
                             "Flower only listens to their events")
    log_options.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from workers.app import app

    _transport_by_url(app)
    if args.remote_control == "off":
        _monitor_only(app)
    argv = [*log_options.celery_flags(args), "flower", f"--port={args.port}", f"--address={args.address}",
            "--max_tasks=20000",
            f"--tasks_columns={TASK_COLUMNS}",
            "--purge_offline_workers=300",
            f"--logging={args.log_level.lower()}"]
    if args.basic_auth:
        argv.append(f"--basic-auth={args.basic_auth}")
    if args.url_prefix:
        argv.append(f"--url_prefix={args.url_prefix}")
    if args.remote_control == "off":
        argv.append("--enable_events=False")  # Flower's periodic enable_events broadcast
    app.start(argv)
    return 0


def _transport_by_url(app: object) -> None:
    """Flower connects with kombu's Redis transport the URL's scheme names (``redis``, ``rediss``, ``sentinel``),
    not the workers' guarded one (:mod:`workers.compat`): its Broker page reads the queue lengths through a Redis
    client of its own, made from the connection's URL, and a connection on a transport named by its class has the
    class's name for a scheme (the page answered 404). The guards are the workers': Flower's event thread reconnects
    by itself."""
    app.conf.broker_transport = None  # type: ignore[attr-defined]


def _monitor_only(app: object) -> None:
    """Flower listens and commands nothing: no broadcast (:func:`workers.compat.flower_without_remote_control`) and
    no unacked-message bookkeeping (it consumes only events, acknowledged by nobody)."""
    from workers.compat import flower_without_remote_control

    flower_without_remote_control()
    options = app.conf.broker_transport_options  # type: ignore[attr-defined]
    app.conf.broker_transport_options = {**options, "ack_emulation": False}  # type: ignore[attr-defined]

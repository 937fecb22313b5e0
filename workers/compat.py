"""Every place the project reaches past Celery's and kombu's public API, in one module, checked against the versions
it was written for (:data:`CHECKED`, ``tests/unit/test_compat.py`` fails on any other): on an upgrade, read this
module first.

1. **kombu's Redis transport, guarded and sharing one client per pool** (:class:`Transport`,
   :class:`SentinelTransport`; ``broker_transport`` selects them and keeps the URL's scheme). The guard: a channel
   closed after its connection was torn down can still reach Redis. When Redis goes away and comes back, Celery's
   consumer tears its broker connection down in two steps (``Connection.collect()``, then ``Connection.close()``);
   ``collect()`` clears the transport's ``client``, and a channel that could not close inside it closes again in
   the second step, putting its unacked messages (``task_acks_late``: the running tasks') back through a pool built
   in ``Channel._connparams`` from ``self.connection.client`` -- now ``None``. kombu 5.7.0 raises
   ``AttributeError``, which Celery treats as unrecoverable: the worker exits. Each channel here remembers its
   connection info and builds such a pool from that copy (``_get_pool``). Reproduced against stock kombu by
   ``tests/integration/test_redis_transport.py`` (the crash class is reported upstream: celery/kombu#582, #970).
   The shared client: kombu builds a redis-py client per publish, ack and fanout event without one at hand
   (``conn_or_acquire`` with ``_create_client``), which costs more than the command it sends.
2. **Task events in batches** (:class:`Consumer`, Celery's ``worker_consumer``): the consumer's private
   ``_flush_events`` is deferred up to :data:`FLUSH_INTERVAL_S`.
3. **The reconcile message as kombu stores it** (:func:`stored_message`, :mod:`workers.messages`): the anonymous
   exchange's delivery info (``Channel._inplace_augment_message``) and the list of a priority
   (``Channel._q_for_pri``), so that the work queue's script can push the very message ``send_task`` would.
4. **Beat's last tick** (:func:`beat_last_tick`, ``Service._last_tick``) for beat's liveness probe.
5. **Flower without remote control** (:func:`flower_without_remote_control`): Flower's event thread wakes the workers
   up with a broadcast it always sends (``flower.events.EventReceiver``, ``capture(wakeup=True)``), and its inspector
   broadcasts ``inspect`` commands (``flower.inspector.Inspector._inspect``). Both are commands on the workers'
   remote-control channel, which the chart's Redis ACL refuses Flower unless ``flower.remoteControl`` is on.
6. **Unacked bookkeeping Redis refuses for memory** (:class:`QoS`, kombu's Redis ``QoS.append``/``ack``): at
   ``maxmemory`` Redis refuses every command of a MULTI/EXEC, and kombu's ack is one; the ``OutOfMemoryError`` it
   raises is not a connection error, so Celery takes it as unrecoverable and the worker exits. Here the refusal is
   reported (:mod:`engine.redis_oom`) and only the local bookkeeping is done: a message whose ack Redis refused is
   restored after the visibility timeout, and the work queue makes its second delivery a no-op or one more run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from celery.events.receiver import EventReceiver as CeleryEventReceiver
from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from redis.exceptions import ResponseError

from engine import redis_oom

log = logging.getLogger(__name__)

#: ``broker_transport`` values (``module:Class``) for plain/TLS Redis and for Sentinel
TRANSPORT = "workers.compat:Transport"
SENTINEL_TRANSPORT = "workers.compat:SentinelTransport"


@dataclass(frozen=True)
class _Detached:
    """What ``_connparams`` and the Sentinel pool read of a transport, once the transport has let go of it."""

    client: Any
    default_port: int
    cycle: None = None


class _RemembersConnectionInfo:
    """Mixin for kombu's Redis channels: keep the connection info for pools built after the transport dropped it."""

    connection: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the transport's client is set while channels are created (they are created on a live connection)
        self._conninfo = self.connection.client
        self._default_port = self.connection.default_port

    @contextmanager
    def _connection_info(self) -> Iterator[None]:
        """Stand in for the transport while a pool is built, if the transport no longer holds the connection info."""
        transport = self.connection
        if transport is not None and transport.client is not None:
            yield
            return
        self.connection = _Detached(self._conninfo, self._default_port)
        try:
            yield
        finally:
            self.connection = transport

    def _get_pool(self, asynchronous: bool = False) -> Any:
        with self._connection_info():
            return super()._get_pool(asynchronous)  # type: ignore[misc]


class _SharesItsClient:
    """Mixin for kombu's Redis channels: one synchronous client per connection pool, not one per call.

    kombu builds a new redis-py client for every publish, ack and fanout event it sends without a client at hand
    (``conn_or_acquire``); building one costs more than the command it sends, which task events' fanout publishes
    make many times a second. A redis-py client is thread-safe and holds
    no connection of its own (it takes one from the pool per command), so one per pool serves every call; a new pool
    (after a reconnection) gets a new client.
    """

    pool: Any
    _create_client: Any
    _shared: tuple[Any, Any] | None = None

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        pool = self.pool
        shared = self._shared
        if shared is None or shared[0] is not pool:
            shared = self._shared = (pool, self._create_client())
        yield shared[1]


class QoS(kombu_redis.QoS):
    """kombu's ack emulation, with a refusal for memory reported instead of ending the worker."""

    def append(self, message: Any, delivery_tag: str) -> None:
        try:
            super().append(message, delivery_tag)
        except ResponseError as error:
            if not redis_oom.is_oom(error):
                raise
            redis_oom.report(log, "a message taken is not recorded as unacknowledged (a run of it is still gated)",
                             error)
            virtual.QoS.append(self, message, delivery_tag)

    def ack(self, delivery_tag: str) -> None:
        try:
            super().ack(delivery_tag)
        except ResponseError as error:
            if not redis_oom.is_oom(error):
                raise
            redis_oom.report(log, "a message's acknowledgement is refused (it is delivered again after the "
                                  "visibility timeout; the work queue coalesces it)", error)
            virtual.QoS.ack(self, delivery_tag)


class Channel(_SharesItsClient, _RemembersConnectionInfo, kombu_redis.Channel):
    """kombu's Redis channel, which can still put unacked messages back after its connection was torn down, shares
    one client per pool and survives Redis refusing its bookkeeping for memory."""

    QoS = QoS


class SentinelChannel(_SharesItsClient, _RemembersConnectionInfo, kombu_redis.SentinelChannel):
    """kombu's Sentinel channel, with the same guards (its pool also reads the sentinel addresses from the client)."""

    QoS = QoS


class Transport(kombu_redis.Transport):
    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel


# --- task events in batches ---------------------------------------------------------------------------------------
# Flower (and ``celery events``) learn what a worker does from its task events. Celery buffers them per group and
# publishes the buffer as one ``task.multi`` message, but schedules that flush for the very next turn of the event
# loop, so under load almost every event costs its own PUBLISH and kombu publish. Waiting up to a quarter of a second
# lets a busy worker send one message for a whole batch (Celery still flushes at once at the dispatcher's
# ``buffer_limit``); a monitor sees each event at most that much later, with its own timestamp.

#: the longest a buffered task event waits for company before it is published
FLUSH_INTERVAL_S = 0.25


class Consumer(CeleryConsumer):
    """Celery's worker consumer, flushing buffered task events on a timer of the event loop (the hub)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._events_flushed_at = 0.0
        #: when the flush on the hub's timer is due (None: none is); a timer the hub dropped (a reconnection clears
        #: it) is given up an interval after it was due, so events never wait for a flush that will not come
        self._events_flush_due: float | None = None

    def _flush_events(self) -> None:
        """Runs in the hub's thread (Celery calls it through ``hub.call_soon``): publish now if the last batch went
        out long enough ago, else once, at the end of the interval."""
        now = time.monotonic()
        due = self._events_flush_due
        if due is not None and now < due + FLUSH_INTERVAL_S:
            return  # a flush is on the hub's timer; these events go with it
        wait = self._events_flushed_at + FLUSH_INTERVAL_S - now
        if wait > 0 and self.hub is not None:
            self._events_flush_due = now + wait
            self.hub.call_later(wait, self._flush_events_now)
            return
        self._flush_events_now()

    def _flush_events_now(self) -> None:
        self._events_flush_due = None
        self._events_flushed_at = time.monotonic()
        super()._flush_events()

    def shutdown(self) -> None:
        """The batch waiting for its timer goes out before the event dispatcher closes."""
        self._flush_events_now()
        super().shutdown()


# --- the stored form of a message ---------------------------------------------------------------------------------

def stored_message(channel: Any, message: dict[str, Any], queue: str, priority: int) -> tuple[str, dict[str, Any]]:
    """``message`` (from the channel's public ``prepare_message``) as the Redis transport stores it when published to
    ``queue`` through the anonymous exchange, and the list it goes on for ``priority``."""
    channel._inplace_augment_message(message, "", queue)  # the anonymous exchange: routing key = queue
    return channel._q_for_pri(queue, channel.priority(priority)), message


def beat_last_tick(service: Any) -> float | None:
    """When celery beat's scheduler loop last passed (``Service._last_tick``, monotonic), None before its first."""
    return getattr(service, "_last_tick", None)


def beat_on_standby(service: Any) -> bool:
    """Whether celery beat waits for redbeat's Redis lock (a standby replica, or one taking the lock back) instead
    of ticking: its scheduler, once made, has a lock key and holds no lock."""
    scheduler = vars(service).get("scheduler")  # Service.scheduler is a cached property: never made from here
    return bool(getattr(scheduler, "lock_key", None)) and getattr(scheduler, "lock", None) is None


# --- Flower as a pure monitor ------------------------------------------------------------------------------------

class _ListeningReceiver(CeleryEventReceiver):
    """Celery's event receiver that never wakes the workers: they send heartbeats and task events unasked."""

    def capture(self, limit: int | None = None, timeout: float | None = None, wakeup: bool = True) -> Any:
        return super().capture(limit=limit, timeout=timeout, wakeup=False)


def _inspect_nothing(self: Any, method: str, workername: str | None) -> None:
    """Flower's inspector asks the workers nothing: what it shows comes from their events."""
    return None


def flower_without_remote_control() -> None:
    """Flower sends no command on the workers' remote-control channel: no wake-up broadcast when it starts listening
    and no ``inspect`` (its worker pages show what the events tell; its control buttons do nothing). With
    ``--enable_events=False`` (Flower's own option) and ``ack_emulation`` off (it consumes only events, so it has no
    unacked messages to restore), a Flower whose Redis user may only listen to the events runs without a refusal."""
    import flower.events
    import flower.inspector

    flower.events.EventReceiver = _ListeningReceiver
    flower.inspector.Inspector._inspect = _inspect_nothing


#: the versions whose private names this module was checked against
CHECKED = {"celery": "5.7.0", "kombu": "5.7.0", "flower": "2.2.0"}

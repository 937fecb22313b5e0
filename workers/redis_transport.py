"""kombu's Redis transports with one guard and two savings: a channel closed after its connection was torn down can
still reach Redis, a channel shares one Redis client per pool (:class:`_SharesItsClient`), and the bookkeeping of
unacked messages costs one command per delivery and one per ack (:class:`QoS`).

Why: when Redis goes away and comes back, Celery's consumer tears its broker connection down in two steps
(``Connection.collect()``, then ``Connection.close()``). ``collect()`` ends by clearing the transport's
``client`` (the ``kombu.Connection`` holding the host, port, password and TLS settings). If a channel could not be
closed inside ``collect()`` (its close raised a connection error midway), the second step closes it again, and
closing a channel with unacked messages (``task_acks_late``: the running tasks' messages) puts them back in their
queue through a fresh connection pool, built in ``Channel._connparams`` from ``self.connection.client`` -- now
``None``. kombu 5.7.0 raises ``AttributeError: 'NoneType' object has no attribute 'hostname'``, which is neither a
connection nor a channel error, so Celery treats it as an unrecoverable error and the worker main process exits
(status 0).

Observed with stock kombu in ``tests/chaos/test_redis_loss.py`` (2 runs in 3): ``Consumer.on_connection_error_after_
connected`` -> ``Connection.close`` -> ``_do_close_self`` -> default channel ``close`` -> ``restore_unacked_once`` ->
``restore_unacked`` -> ``_get_pool`` -> ``_connparams``.

The guard: each channel remembers the connection info it was created with and, when it must build a pool after
the transport lost it, builds the pool from that copy. The messages then go back to their queue as kombu intends
(or, if Redis is still away, the restore fails with a connection error, which Celery handles by reconnecting). The
same crash class is reported upstream since 2016 (celery/kombu#582 from a Gossip channel's close, #970 from
``restore_unacked``); :mod:`tests.integration.test_redis_transport` reproduces it against stock kombu.

Selected by Celery's ``broker_transport`` setting (:func:`engine.redis_client.celery_options`), which takes precedence
over the URL's scheme, so ``redis://``, ``rediss://`` and ``sentinel://`` URLs keep their meaning.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from time import time
from typing import Any

from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import dumps, loads

#: the suffix of the hash field that holds a delivered message's delivery time, beside the message (:class:`QoS`)
STAMP = "|t"
#: ``broker_transport`` values (``module:Class``) for plain/TLS Redis and for Sentinel
TRANSPORT = "workers.redis_transport:Transport"
SENTINEL_TRANSPORT = "workers.redis_transport:SentinelTransport"


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
    """kombu's unacked-message bookkeeping in one command per delivery and one per ack.

    kombu records every delivered message in two keys (``HSET unacked`` the message, ``ZADD unacked_index`` its
    delivery time) inside MULTI/EXEC, and erases both at the ack: eight commands per message. Here the delivery
    time is a second field of the same hash (``<tag>|t``), so a delivery is one HSET and an ack one HDEL, on a plain
    pipeline: nothing needs them atomic, since the only reader, the visibility-timeout restore, takes entries older
    than the timeout (30 minutes by default, always above twice the longest run: :mod:`workers.config`), never one
    being written or acked now. The restore finds those entries with an HSCAN of the time fields, and still reads
    ``unacked_index`` for what a release before this one recorded there. Restores keep kombu's transaction.
    """

    def append(self, message: Any, delivery_tag: str) -> None:
        delivery = message.delivery_info
        record = dumps([message._raw, delivery["exchange"], delivery["routing_key"]])
        with self.channel.conn_or_acquire() as client:
            client.hset(self.unacked_key, mapping={delivery_tag: record, delivery_tag + STAMP: time()})
        virtual.QoS.append(self, message, delivery_tag)

    @contextmanager
    def pipe_or_acquire(self, pipe: Any = None, client: Any = None) -> Iterator[Any]:
        if pipe:
            yield pipe
            return
        with self.channel.conn_or_acquire(client) as acquired:
            yield acquired.pipeline(transaction=False)

    def _remove_from_indices(self, delivery_tag: str, pipe: Any = None) -> Any:
        with self.pipe_or_acquire(pipe) as pipe:
            return pipe.hdel(self.unacked_key, delivery_tag, delivery_tag + STAMP)

    def restore_by_tag(self, tag: Any, client: Any = None, leftmost: bool = False) -> None:
        """kombu's restore in one transaction: the record read, erased (with kombu's own index entry, which a worker
        of kombu's layout may have written) and its message put back on its queue."""
        tag = bytes_to_str(tag)

        def restore(pipe: Any) -> None:
            record = pipe.hget(self.unacked_key, tag)
            pipe.multi()
            self._remove_from_indices(tag, pipe)
            pipe.zrem(self.unacked_index_key, tag)
            if record:
                raw, exchange, routing_key = loads(bytes_to_str(record))
                self.channel._do_restore_message(raw, exchange, routing_key, pipe, leftmost)

        with self.channel.conn_or_acquire(client) as acquired:
            acquired.transaction(restore, self.unacked_key)

    def restore_visible(self, start: int = 0, num: int = 10, interval: int = 10) -> None:
        """Put back the messages delivered longer than the visibility timeout ago and never acked (their consumer
        died), at most ``num`` per call and one call in ``interval``, under kombu's mutex, as kombu does."""
        self._vrestore_count += 1
        if (self._vrestore_count - 1) % (interval or 1):
            return
        with self.channel.conn_or_acquire() as client:
            ceil = time() - self.visibility_timeout
            try:
                with kombu_redis.Mutex(client, self.unacked_mutex_key, self.unacked_mutex_expire):
                    for tag in self._expired(client, ceil, num):
                        self.restore_by_tag(tag, client)
            except kombu_redis.MutexHeld:
                pass

    def _expired(self, client: Any, ceil: float, num: int) -> list[str]:
        tags = [bytes_to_str(name)[:-len(STAMP)]
                for name, stamp in client.hscan_iter(self.unacked_key, match="*" + STAMP) if float(stamp) < ceil]
        limit = {"offset": 0, "num": num} if num else {}
        legacy = client.zrange(self.unacked_index_key, ceil, 0, desc=True, byscore=True, **limit)
        return (tags + [bytes_to_str(tag) for tag in legacy or []])[:num or None]


class Channel(_SharesItsClient, _RemembersConnectionInfo, kombu_redis.Channel):
    """kombu's Redis channel, which can still put unacked messages back after its connection was torn down, shares
    one client per pool, and keeps its unacked bookkeeping without transactions."""

    QoS = QoS


class SentinelChannel(_SharesItsClient, _RemembersConnectionInfo, kombu_redis.SentinelChannel):
    """kombu's Sentinel channel, with the same guard (its pool also reads the sentinel addresses from the client)."""

    QoS = QoS


class Transport(kombu_redis.Transport):
    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel

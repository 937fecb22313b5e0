"""The broker transport survives Redis going away and coming back, against a real redis-server.

The sequence is the one Celery's consumer runs after a connection error (``Connection.collect()``, then the owner of
each channel closes it): a channel whose BRPOP was in flight when Redis died makes ``collect()`` stop midway, the
transport forgets its connection info, and the channel holding an unacked message (acks_late: a running task) is
closed afterwards. Stock kombu 5.7.0 raises ``AttributeError`` there, which Celery calls unrecoverable (the worker
exits); :mod:`workers.compat` closes the channel (restoring what Redis still has) instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis
from kombu import Connection, Consumer, Producer, Queue

from stack.testing import RedisServer
from workers.compat import TRANSPORT


@pytest.fixture()
def server() -> Iterator[RedisServer]:
    with RedisServer() as started:
        yield started


def _torn_down_with_an_unacked_message(server: RedisServer, transport: str | None) -> tuple[Connection, object]:
    """A connection in the state a Redis restart leaves it in: transport dropped, one channel still holding a
    delivered but unacknowledged message. Redis is back when this returns."""
    connection = Connection(server.url, transport=transport)
    tasks, other = Queue("tasks"), Queue("other")
    Producer(connection.channel()).publish({"n": 1}, routing_key="tasks", declare=[tasks, other])
    holding = connection.channel()
    delivered: list[object] = []
    Consumer(holding, [tasks], callbacks=[lambda body, message: delivered.append(message)], prefetch_count=1).consume()
    connection.drain_events(timeout=5)
    assert delivered, "the message was not delivered"
    waiting = connection.channel()  # created last, so the teardown closes it first
    Consumer(waiting, [other]).consume()
    connection.transport.cycle._register_BRPOP(waiting)  # its BRPOP is in flight, as in the worker's event loop
    assert server.process is not None
    server.process.kill()
    server.process.wait(10)
    connection.collect(socket_timeout=1)  # what Celery's consumer does on a connection error
    assert holding.connection.client is None and not holding.closed  # the state that crashes stock kombu
    server.start()
    return connection, holding


def test_stock_kombu_loses_the_connection_info_and_crashes(server: RedisServer) -> None:
    """Documents the upstream bug the guard works around: when this fails, kombu has fixed it."""
    _, holding = _torn_down_with_an_unacked_message(server, None)
    with pytest.raises(AttributeError, match="hostname"):
        holding.close()


def test_guarded_transport_closes_the_channel(server: RedisServer) -> None:
    """The restore runs against the Redis that came back (empty: its unacked record died with the old one)."""
    _, holding = _torn_down_with_an_unacked_message(server, TRANSPORT)
    holding.close()
    assert holding.closed


def test_guarded_transport_fails_with_a_connection_error_while_redis_is_away(server: RedisServer) -> None:
    """Redis still away: the restore fails with an error Celery handles by reconnecting, never AttributeError."""
    _, holding = _torn_down_with_an_unacked_message(server, TRANSPORT)
    assert server.process is not None
    server.process.kill()
    server.process.wait(10)
    with pytest.raises(redis.ConnectionError):
        holding.close()


def _deliver_one(connection: Connection, declared: Callable[[], None] = lambda: None) -> list:
    """Publish one message and deliver it unacked to a consumer; ``declared`` runs once the queue exists."""
    queue = Queue("tasks")
    Producer(connection.channel()).publish({"n": 1}, routing_key="tasks", declare=[queue])
    channel = connection.channel()
    delivered: list = []
    consumer = Consumer(channel, [queue], callbacks=[lambda body, message: delivered.append(message)],
                        prefetch_count=1)
    consumer.consume()
    declared()
    connection.drain_events(timeout=5)
    assert delivered, "the message was not delivered"
    return delivered


def test_unacked_messages_are_kept_in_kombus_own_layout(server: RedisServer) -> None:
    """The guarded transport keeps kombu's Redis layout, so other Celery tools (a second app, ``celery purge``,
    kombu's visibility-timeout restore in any worker) read it: the delivered message in ``unacked``, its delivery
    time in ``unacked_index``, both gone after the ack."""
    client = redis.Redis.from_url(server.url)
    with Connection(server.url, transport=TRANSPORT) as connection:
        (message,) = _deliver_one(connection)
        tag = message.delivery_tag
        assert client.hexists("unacked", tag) and client.zscore("unacked_index", tag) is not None
        message.ack()
    assert not client.hexists("unacked", tag) and client.zscore("unacked_index", tag) is None

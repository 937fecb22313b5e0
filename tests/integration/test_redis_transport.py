"""The broker transport survives Redis going away and coming back (issue 18 item 1), against a real redis-server.

The sequence is the one Celery's consumer runs after a connection error (``Connection.collect()``, then the owner of
each channel closes it): a channel whose BRPOP was in flight when Redis died makes ``collect()`` stop midway, the
transport forgets its connection info, and the channel holding an unacked message (acks_late: a running task) is
closed afterwards. Stock kombu 5.7.0 raises ``AttributeError`` there, which Celery calls unrecoverable (the worker
exits); :mod:`workers.redis_transport` closes the channel (restoring what Redis still has) instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest
import redis
from kombu import Connection, Consumer, Producer, Queue

from stack.testing import RedisServer
from tests.waiting import wait_for
from workers.redis_transport import STAMP, TRANSPORT


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


def _commands(client: redis.Redis) -> dict[str, int]:
    return {name.removeprefix("cmdstat_"): int(stats["calls"]) for name, stats in client.info("commandstats").items()}


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


def test_unacked_bookkeeping_is_one_command_per_delivery_and_one_per_ack(server: RedisServer) -> None:
    """A delivery is recorded (the message and its delivery time, in one hash) and its ack erases the record: one
    HSET and one HDEL per message, no index, no MULTI/EXEC (kombu sends eight commands)."""
    client = redis.Redis.from_url(server.url)
    before: dict[str, int] = {}
    with Connection(server.url, transport=TRANSPORT) as connection:
        delivered = _deliver_one(connection, lambda: before.update(_commands(client)))
        tag = delivered[0].delivery_tag
        assert set(client.hkeys("unacked")) == {tag.encode(), f"{tag}{STAMP}".encode()}
        assert float(client.hget("unacked", f"{tag}{STAMP}")) == pytest.approx(time.time(), abs=60)
        delivered[0].ack()
        after = _commands(client)
    assert client.hlen("unacked") == 0 and not client.exists("unacked_index")
    spent = {name: after.get(name, 0) - before.get(name, 0) for name in ("hset", "hdel", "zadd", "zrem", "multi")}
    assert spent == {"hset": 1, "hdel": 1, "zadd": 0, "zrem": 0, "multi": 0}


def test_an_unacked_message_past_the_visibility_timeout_is_restored(server: RedisServer) -> None:
    """What the bookkeeping is for still works: a consumer that dies holding a message gives it back, through the
    visibility-timeout restore another consumer runs."""
    client = redis.Redis.from_url(server.url)
    options = {"visibility_timeout": 0.2}
    dying = Connection(server.url, transport=TRANSPORT, transport_options=options)
    try:
        _deliver_one(dying)  # never acked, and the consumer does not close while the other restores (as if killed)
        assert client.llen("tasks") == 0 and client.hlen("unacked") == 2
        with Connection(server.url, transport=TRANSPORT, transport_options=options) as other:
            channel = other.channel()

            def restored() -> bool:
                channel.qos.restore_visible(interval=1)
                return client.llen("tasks") == 1

            wait_for(restored, timeout=10, message="the unacked message back on its queue")
        assert client.hlen("unacked") == 0 and client.zcard("unacked_index") == 0
    finally:
        dying.release()


def test_what_an_older_release_recorded_in_the_index_is_still_restored(server: RedisServer) -> None:
    """A message an older release delivered (recorded in ``unacked_index``) and never acked comes back as before,
    and leaves no record behind."""
    client = redis.Redis.from_url(server.url)
    client.flushall()
    message = {"body": "e30=", "content-encoding": "utf-8", "content-type": "application/json", "headers": {},
               "properties": {"delivery_tag": "old", "delivery_info": {"exchange": "", "routing_key": "tasks"},
                              "priority": 0, "body_encoding": "base64"}}
    client.hset("unacked", "old", json.dumps([message, "", "tasks"]))
    client.zadd("unacked_index", {"old": time.time() - 10})
    with Connection(server.url, transport=TRANSPORT, transport_options={"visibility_timeout": 1}) as connection:
        connection.channel().qos.restore_visible(interval=1)
    assert client.llen("tasks") == 1
    assert client.hlen("unacked") == 0 and client.zcard("unacked_index") == 0

"""Reconcile messages on Celery's wire: ``poolboy.reconcile.<kind>`` on the kind's queue (:mod:`workers.names`),
sent by the work queue's own scripts (:class:`QueuedMessages`) or, for the runs they did not push, through
``send_task`` (:class:`CeleryPublisher`); :func:`enqueuer` gives the engine both.

The work queue pushes messages as kombu's Redis transport keeps them in a queue list, so that it can push a message
in the same script that decides it is owed.

Why: publishing through ``Celery.send_task`` cost the watcher about a third of its CPU (kombu's producer declares,
copies and wraps every publish in its retry machinery) and every woken key a second round trip after the work queue's
(the work queue decides, then the client publishes). A work queue script that LPUSHes the message itself makes the
decision and the publish one atomic step: no window in which a key is marked "queued" while its message was never sent,
and one round trip per watch event. ``poolboy worker`` consumes these messages like any other: they are what
kombu would have stored (Celery's task protocol 2: headers, properties, base64 body; kombu's priority lists).

The parts that never change for a (task, queue, priority) come from the libraries themselves, once:
``app.amqp.as_task_v2`` builds the task message, kombu's channel ``prepare_message`` and the anonymous-exchange
delivery info wrap it, and the channel names the priority list (the last two through private names, so in
:mod:`workers.compat`). Per message only what Celery sets per task is
replaced: the task id (``id``, ``root_id``, ``correlation_id``), the arguments (``argsrepr`` and the body) and
kombu's ``delivery_tag``. :mod:`tests.integration.test_queued_messages` holds the result against ``send_task``'s.

``argsrepr`` (what a worker's task events carry as the task's arguments, so what Flower lists and searches) is the
work key itself, ``claim/demo/hello``, rather than Celery's ``repr`` of the argument list.
"""

from __future__ import annotations

import base64
import functools
import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from kombu import serialization

from engine.enqueue import Enqueuer
from engine.runtime import work_queue
from workers import compat
from workers.names import route
from workqueue.queue import Publish

if TYPE_CHECKING:
    import redis
    from celery import Celery

    from poolboy.settings import Settings

#: Celery's body: ``[args, kwargs, embed]`` (task protocol 2)
_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


@functools.lru_cache(maxsize=16384)
def _body(key: str, serializer: str) -> str:
    """The base64 body of ``reconcile(key)``, as Celery encodes it: the same for every message of a key."""
    _, _, body = serialization.dumps([[key], {}, _EMBED], serializer=serializer)
    return base64.b64encode(body.encode() if isinstance(body, str) else body).decode()


class QueuedMessages:
    """``QueuedMessages(app).encode(key, msg_id, priority)`` -> (the Redis list to LPUSH onto, the message)."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self._templates: dict[tuple[str, int], tuple[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def encode(self, key: str, msg_id: str, priority: int) -> tuple[str, bytes]:
        """Called for every key every watch event wakes, though most never publish (the script pushes the message
        only when it decides a run is owed): shallow copies of the template with the per-message fields replaced
        (the template's nested parts are shared, never changed), and the body cached per key."""
        task, queue = route(key)
        list_key, template = self._template(task, queue, priority)
        headers = {**template["headers"], "id": msg_id, "root_id": msg_id, "argsrepr": key}
        properties = {**template["properties"], "correlation_id": msg_id, "delivery_tag": str(uuid.uuid4())}
        message = {**template, "headers": headers, "properties": properties, "body": _body(key, self._serializer)}
        return list_key, orjson.dumps(message)

    @functools.cached_property
    def _serializer(self) -> str:
        """The app's task serializer, read once: a lookup in Celery's configuration view was 4 % of the watcher's
        CPU when it was read for every key every watch event wakes."""
        return str(self.app.conf.task_serializer)

    def _template(self, task: str, queue: str, priority: int) -> tuple[str, dict[str, Any]]:
        found = self._templates.get((queue, priority))
        if found is None:
            with self._lock:
                found = self._templates.get((queue, priority)) or self._build(task, queue, priority)
                self._templates[(queue, priority)] = found
        return found

    def _build(self, task: str, queue: str, priority: int) -> tuple[str, dict[str, Any]]:
        """One message exactly as Celery and kombu would store it, from their own code."""
        msg_id = str(uuid.uuid4())
        task_message = self.app.amqp.as_task_v2(msg_id, task, args=["-"], kwargs={}, ignore_result=None)
        content_type, encoding, body = serialization.dumps(task_message.body,
                                                           serializer=self.app.conf.task_serializer)
        if content_type != "application/json":  # the body is re-encoded per message, as JSON
            raise ValueError(f"queued messages support the json serializer, not {content_type}")
        properties = {**task_message.properties, "reply_to": self.app.thread_oid, "delivery_mode": 2}
        with self.app.connection_for_write() as connection:
            channel = connection.default_channel
            message = channel.prepare_message(body, priority, content_type, encoding, task_message.headers,
                                              properties)
            list_key, message = compat.stored_message(channel, message, queue, priority)
        return list_key, message


class CeleryPublisher:
    """``CeleryPublisher(app).publish(publishes)``: the runs the queue's scripts did not push, sent with ``send_task``
    (the engine's :class:`engine.enqueue.Publisher`), several on one producer connection."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def publish(self, publishes: Sequence[Publish]) -> None:
        if len(publishes) == 1:
            self._send(publishes[0])
        elif publishes:
            with self.app.producer_or_acquire() as producer:
                for publish in publishes:
                    self._send(publish, producer)

    def _send(self, publish: Publish, producer: object = None) -> None:
        """One reconcile message exactly as the queue asked (task id = the queue's message id)."""
        task, queue = route(publish.key)
        self.app.send_task(task, args=[publish.key], argsrepr=publish.key, task_id=publish.msg_id, queue=queue,
                           priority=publish.priority, producer=producer)


def enqueuer(app: Celery, settings: Settings, client: redis.Redis | None = None) -> Enqueuer:
    """The engine's :class:`~engine.enqueue.Enqueuer` on ``app``'s messages: the work queue of ``settings`` (on
    ``client``, or a client of its own) pushes those it decides are owed, the rest go through ``send_task``."""
    return Enqueuer(work_queue(settings, QueuedMessages(app).encode, client), CeleryPublisher(app))

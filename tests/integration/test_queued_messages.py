"""The work queue pushes the reconcile messages it decides are owed (workers/messages.py), on a real redis-server: the
message is the one ``Celery.send_task`` would have stored, it is pushed exactly when ADD or OBSERVE answers
``published``, and a run published that way reaches a real worker (the engine tests, ``test_engine*``, run every
key through this path)."""

from __future__ import annotations

import json

import redis

from engine.enqueue import Enqueuer
from engine.own_writes import OwnWrites
from workqueue import keyspace
from workqueue.queue import MESSAGE_PRIORITY
from workqueue.roundtrip import send_all

KEY = "claim/ns/a"
#: set per message, by Celery (the task id and its copies) or kombu (the delivery tag)
PER_MESSAGE = {("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id"),
               ("properties", "delivery_tag"), ("properties", "reply_to"), ("headers", "origin")}
#: what only ``send_task`` stores: it passes its options on as properties too, so ``argsrepr`` (the header the worker
#: reads, and puts in its task events) has a copy there that nothing reads
SEND_TASK_ONLY = {("properties", "argsrepr")}


def _queued(r: redis.Redis, queue: str = "claims") -> list[dict]:
    """Every message on ``queue``'s lists (kombu keeps one list per priority step)."""
    names = [name for name in r.keys(f"{queue}*") if name == queue or name.startswith(queue + "\x06")]
    return [json.loads(raw) for name in names for raw in r.lrange(name, 0, -1)]


def _without(fields: set[tuple[str, str]], message: dict) -> dict:
    message = json.loads(json.dumps(message))
    for section, field in fields:
        message[section].pop(field, None)
    return message


def test_a_pushed_message_is_the_one_send_task_stores(r: redis.Redis, enqueuer: Enqueuer) -> None:
    assert enqueuer.add(KEY, "resync") == "published"
    (pushed,) = _queued(r)
    r.delete(*r.keys("claims*"))
    enqueuer.publisher.app.send_task("poolboy.reconcile.claim", args=[KEY], argsrepr=KEY,
                                           task_id="sent-by-celery", queue="claims", priority=MESSAGE_PRIORITY[1])
    (sent,) = _queued(r)
    assert _without(PER_MESSAGE, pushed) == _without(PER_MESSAGE | SEND_TASK_ONLY, sent)
    assert pushed["headers"]["argsrepr"] == sent["headers"]["argsrepr"] == KEY
    assert pushed["headers"]["id"] == pushed["properties"]["correlation_id"] == r.get(keyspace.pending(KEY)) \
        .split("|")[0], "the task id is the queue's message id"
    assert pushed["properties"]["delivery_tag"] != sent["properties"]["delivery_tag"]


def test_the_queue_pushes_exactly_the_messages_it_decides_are_owed(r: redis.Redis, enqueuer: Enqueuer) -> None:
    assert enqueuer.add_many([KEY, KEY, "handle/op/h"]) == ["published", "coalesced", "published"]
    assert [m["headers"]["argsrepr"] for m in _queued(r)] == [KEY]  # what Flower lists as the task's arguments
    assert [m["headers"]["argsrepr"] for m in _queued(r, "handles")] == ["handle/op/h"]
    (observed,) = send_all(r, [OwnWrites(enqueuer.queue).observe_call(KEY, "uid/1")])
    assert observed.outcome == "coalesced"
    assert len(_queued(r)) == 1, "a coalesced event pushes nothing"

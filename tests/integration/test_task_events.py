"""Task events, as Flower and ``celery events`` receive them, from a real worker on a real Redis: every task's
``task-received``, ``task-started`` and ``task-succeeded`` arrives, and a busy worker sends them in batches
(:mod:`workers.compat`), not one ``PUBLISH`` per event."""

from __future__ import annotations

import base64
import collections
import json
import threading
from collections.abc import Iterator

import pytest
import redis

from stack.testing import WorkerProcess
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, RECONCILERS
from tests.waiting import wait_for

pytestmark = pytest.mark.slow

EVENT_TYPES = ("task-received", "task-started", "task-succeeded")


class EventListener:
    """Subscribes to the events exchange (a Redis fanout: PUBLISH on ``/<db>.celeryev/<routing key>``) and counts
    messages and the task events they carry."""

    def __init__(self, client: redis.Redis) -> None:
        self.pubsub = client.pubsub(ignore_subscribe_messages=True)
        self.pubsub.psubscribe("/*.celeryev/task.*")
        self.messages = 0
        self.events: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._listen, daemon=True)
        self.thread.start()

    def _listen(self) -> None:
        while not self.stopped.is_set():
            message = self.pubsub.get_message(timeout=0.2)
            if message is None:
                continue
            body = json.loads(_body(message["data"]))
            batch = body if isinstance(body, list) else [body]
            with self.lock:
                self.messages += 1
                for event in batch:
                    self.events[event["type"]] += 1

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        self.pubsub.close()


def _body(data: bytes) -> str:
    """The event payload of a kombu message on Redis (a JSON envelope whose body is base64 or plain JSON)."""
    envelope = json.loads(data)
    body = envelope["body"]
    if envelope.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body).decode()
    return body


@pytest.fixture()
def listener(r) -> Iterator[EventListener]:
    events = EventListener(r)
    yield events
    events.close()


def test_a_burst_sends_every_task_event_in_batches(redis_server, r, enqueuer, listener):
    keys = [f"claim/events/k{i}" for i in range(60)]
    env = {**ENV, "POOLBOY_TASK_EVENTS": "1"}
    with WorkerProcess(redis_server.url, ["claims"], 4, reconcilers=RECONCILERS, env=env, pool="threads") as worker:
        for key in keys:
            assert enqueuer.add(key) == "published"
        wait_for(lambda: all(er.completed(r, key) >= 1 for key in keys), 60, message="every key ran")
        wait_for(lambda: all(listener.events[t] >= len(keys) for t in EVENT_TYPES), 10,
                 message=f"every task's events\n{dict(listener.events)}\n{worker.log()[-2000:]}")
    with listener.lock:
        events, messages = sum(listener.events[t] for t in EVENT_TYPES), listener.messages
    assert messages <= events / 3, f"{messages} messages for {events} events: not batched"

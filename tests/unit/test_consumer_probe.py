"""The worker's liveness logic (workers.health.consumer_probe, Sustained) on stand-in consumers: pure logic."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from celery import bootsteps

from workers.health import LoopTicks, Sustained, consumer_probe


def consumer(state: int = bootsteps.RUN, connected: bool | None = True, task_consumer: object = "tasks") -> object:
    connection = None if connected is None else SimpleNamespace(connected=connected)
    return SimpleNamespace(blueprint=SimpleNamespace(state=state), connection=connection,
                           task_consumer=task_consumer)


def test_a_consuming_worker_is_live() -> None:
    ticks = LoopTicks()
    ticks()
    assert consumer_probe(consumer(), ticks, 5.0) is None


@pytest.mark.parametrize(("stand_in", "reason"), [
    (consumer(state=bootsteps.CLOSE), "consumer not running"),
    (consumer(state=bootsteps.TERMINATE), "consumer not running"),
    (SimpleNamespace(blueprint=None, connection=None, task_consumer=None), "consumer not running"),
    (consumer(connected=None), "no broker connection"),
    (consumer(connected=False), "no broker connection"),
    (consumer(task_consumer=None), "no task consumer"),
])
def test_a_consumer_that_does_not_consume_is_not_live(stand_in: object, reason: str) -> None:
    assert consumer_probe(stand_in) == reason


def test_an_event_loop_that_stopped_turning_is_not_live() -> None:
    ticks = LoopTicks(last=time.monotonic() - 30)
    assert consumer_probe(consumer(), ticks, 10.0) == "event loop silent for 30s"
    assert consumer_probe(consumer(), ticks, 60.0) is None


def test_no_tick_yet_or_no_event_loop_is_not_a_failure() -> None:
    assert consumer_probe(consumer(), LoopTicks(), 0.0) is None
    assert consumer_probe(consumer(), None, 0.0) is None


def test_a_failure_counts_only_once_it_lasted_the_grace() -> None:
    state = {"reason": "no broker connection"}
    sustained = Sustained(lambda: state["reason"], grace=0.2)
    assert sustained() is None  # a reconnect in progress
    deadline = time.monotonic() + 5
    while sustained() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (sustained() or "").startswith("no broker connection (for ")
    state["reason"] = None
    assert sustained() is None
    state["reason"] = "no broker connection"
    assert sustained() is None  # a new failure starts its own grace


def test_loop_ticks_can_be_registered_on_kombus_event_loop() -> None:
    from kombu.asynchronous import Hub

    from workers.health import LoopTicks

    hub, ticks = Hub(), LoopTicks()
    hub.on_tick.add(ticks)  # a set: the callback must be hashable
    for callback in hub.on_tick:
        callback()
    assert ticks.last is not None
    hub.close()

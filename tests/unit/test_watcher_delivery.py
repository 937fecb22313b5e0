"""The watcher's delivery queue (:mod:`watcher.delivery`): events reach the intake in order, in batches of whatever
queued up behind the round trip in hand; nothing submitted is lost; a full queue holds the informers back; a relist
can wait for what was queued before it. And the event path on top of it: a failed delivery is retried whole until
it lands, or until the watcher no longer holds its lease."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import pytest

from engine.registries import WATCHER
from poolboy.settings import Settings
from tests.waiting import blocked_in, wait_for
from watcher import mapping
from watcher.delivery import DeliveryBuffer, Event, EventDelivery


class Intake:
    """Records each batch; ``hold`` keeps the round trip in hand from ending until it is set."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.fail_next = False

    def __call__(self, batch: list[int]) -> None:
        self.batches.append(list(batch))
        self.hold.wait(10)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("a bug in the deliverer")

    @property
    def delivered(self) -> list[int]:
        return [item for batch in self.batches for item in batch]


@pytest.fixture()
def intake() -> Intake:
    return Intake()


@pytest.fixture()
def queue(intake: Intake) -> Iterator[DeliveryBuffer[int]]:
    running: DeliveryBuffer[int] = DeliveryBuffer(intake, max_batch=4, max_queued=6).start()
    yield running
    intake.hold.set()
    running.stop()


def started(target: Callable[[], object]) -> threading.Thread:
    """``target`` running in a thread of its own, as an informer or a relist calls the queue."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_events_queued_behind_a_round_trip_go_together_in_order(queue: DeliveryBuffer[int], intake: Intake) -> None:
    intake.hold.clear()
    queue.submit(0)
    wait_for(lambda: intake.batches == [[0]], message="the first event goes alone, at once")
    for item in range(1, 6):
        queue.submit(item)
    intake.hold.set()
    queue.drain()
    assert intake.batches == [[0], [1, 2, 3, 4], [5]], "at most max_batch per round trip, in submission order"
    assert queue.pending() == 0


def test_a_full_queue_holds_the_submitter_back_until_there_is_room(queue: DeliveryBuffer[int], intake: Intake) -> None:
    intake.hold.clear()
    queue.submit(0)
    wait_for(lambda: intake.batches == [[0]], message="a round trip in hand")
    for item in range(1, 7):
        queue.submit(item)  # six queued: full
    submitted = threading.Event()
    informer = started(lambda: (queue.submit(7), submitted.set()))
    wait_for(lambda: blocked_in(informer, "submit"), message="the informer to wait while the queue is full")
    assert not submitted.is_set()
    intake.hold.set()
    assert submitted.wait(5), "and goes on once the deliverer took a batch"
    queue.drain()
    assert intake.delivered == list(range(8))


def test_drain_waits_for_what_was_submitted_before_it(queue: DeliveryBuffer[int], intake: Intake) -> None:
    intake.hold.clear()
    queue.submit(1)
    queue.submit(2)
    drained = threading.Event()
    relist = started(lambda: (queue.drain(), drained.set()))
    wait_for(lambda: blocked_in(relist, "drain"), message="a relist to wait while older events are on their way")
    assert not drained.is_set()
    intake.hold.set()
    assert drained.wait(5)
    assert intake.delivered == [1, 2]


def test_clear_drops_what_is_queued_and_releases_a_drain(queue: DeliveryBuffer[int], intake: Intake) -> None:
    """A relist waiting for events a watcher that lost its lease drops waits only for the round trip in hand."""
    intake.hold.clear()
    queue.submit(1)
    wait_for(lambda: intake.batches == [[1]], message="a round trip in hand")
    queue.submit(2)
    queue.submit(3)
    drained = threading.Event()
    relist = started(lambda: (queue.drain(), drained.set()))
    wait_for(lambda: blocked_in(relist, "drain"), message="a relist to wait for the three events")
    assert queue.clear() == 2, "a watcher that lost its lease hands nothing more on"
    assert queue.pending() == 1, "only the round trip in hand is left"
    intake.hold.set()
    assert drained.wait(5), "the drain is released once the round trip in hand ends"
    assert intake.delivered == [1]


def test_a_failing_delivery_does_not_end_the_thread(queue: DeliveryBuffer[int], intake: Intake) -> None:
    intake.fail_next = True
    queue.submit(1)
    queue.drain()
    queue.submit(2)
    queue.drain()
    assert intake.delivered == [1, 2]
    assert queue.alive


def test_a_stopped_queue_takes_nothing(intake: Intake) -> None:
    queue: DeliveryBuffer[int] = DeliveryBuffer(intake).start()
    queue.stop()
    queue.submit(1)
    queue.drain()
    assert intake.delivered == []
    assert not queue.running


# --- the event path ------------------------------------------------------------------------------------------------

ROUTE_CLAIM = mapping.POOLBOY_ROUTES[0]
CLAIM = {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
         "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "1"}}


class FailingIntake:
    """Fails the first ``failures`` deliveries (Redis away), then takes them; records every attempt."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[list[Event]] = []

    def deliver_many(self, events: Sequence[Event]) -> list[list[str]]:
        self.attempts.append(list(events))
        if len(self.attempts) <= self.failures:
            raise ConnectionError("Redis away")
        return [["published"] * len(wakes) for _, _, wakes in events]


def delivery(intake: FailingIntake, watching: threading.Event) -> EventDelivery:
    events = EventDelivery(Settings.from_env(operator_namespace="op"), intake=intake, cache=None,
                           observe=lambda *_: None, watching=watching.is_set, stopping=threading.Event())
    events.start()
    return events


def drained(queue: DeliveryBuffer[Event], timeout: float = 10) -> bool:
    """Whether everything submitted to ``queue`` was delivered or dropped within ``timeout``."""
    done = threading.Event()
    threading.Thread(target=lambda: (queue.drain(), done.set()), daemon=True).start()
    return done.wait(timeout)


def sample(name: str, **labels: str) -> float:
    return WATCHER.get_sample_value(name, labels) or 0.0


def test_a_failed_delivery_is_retried_whole_until_it_lands() -> None:
    intake, watching = FailingIntake(failures=2), threading.Event()
    watching.set()
    events = delivery(intake, watching)
    errors, keys = sample("poolboy_watcher_sink_errors_total"), sample("poolboy_watcher_keys_total", kind="claim")
    try:
        events.on_event(ROUTE_CLAIM, "MODIFIED", CLAIM)
        assert drained(events.queues[ROUTE_CLAIM]), "delivered after the failures"
    finally:
        events.stop()
    assert intake.attempts == [[("MODIFIED", CLAIM, [("claim/ns/a", "u/1")])]] * 3
    assert sample("poolboy_watcher_sink_errors_total") == errors + 2
    assert sample("poolboy_watcher_keys_total", kind="claim") == keys + 1, "counted once, when it landed"


def test_a_failing_delivery_is_given_up_once_the_lease_is_lost() -> None:
    intake, watching = FailingIntake(failures=10**6), threading.Event()
    watching.set()
    events = delivery(intake, watching)
    try:
        events.on_event(ROUTE_CLAIM, "MODIFIED", CLAIM)
        wait_for(lambda: len(intake.attempts) >= 2, message="the delivery retried")
        watching.clear()  # the next leader lists everything: this watcher drops what it holds
        assert drained(events.queues[ROUTE_CLAIM]), "the delivery was given up"
    finally:
        events.stop()

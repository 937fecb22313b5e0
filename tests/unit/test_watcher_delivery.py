"""The watcher's delivery queue (:mod:`watcher.delivery`): events reach the intake in order, in batches of whatever
queued up behind the round trip in hand; nothing submitted is lost; a full queue holds the informers back; a relist
can wait for what was queued before it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.waiting import wait_for
from watcher.delivery import DeliveryQueue


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
def queue(intake: Intake) -> Iterator[DeliveryQueue[int]]:
    running: DeliveryQueue[int] = DeliveryQueue(intake, max_batch=4, max_queued=6).start()
    yield running
    intake.hold.set()
    running.stop()


def test_events_queued_behind_a_round_trip_go_together_in_order(queue: DeliveryQueue[int], intake: Intake) -> None:
    intake.hold.clear()
    queue.submit(0)
    wait_for(lambda: intake.batches == [[0]], message="the first event goes alone, at once")
    for item in range(1, 6):
        queue.submit(item)
    intake.hold.set()
    queue.drain()
    assert intake.batches == [[0], [1, 2, 3, 4], [5]], "at most max_batch per round trip, in submission order"
    assert queue.pending() == 0


def test_a_full_queue_holds_the_submitter_back_until_there_is_room(queue: DeliveryQueue[int], intake: Intake) -> None:
    intake.hold.clear()
    queue.submit(0)
    wait_for(lambda: intake.batches == [[0]], message="a round trip in hand")
    for item in range(1, 7):
        queue.submit(item)  # six queued: full
    submitted = threading.Event()
    threading.Thread(target=lambda: (queue.submit(7), submitted.set()), daemon=True).start()
    assert not submitted.wait(0.3), "the informer waits while the queue is full"
    intake.hold.set()
    assert submitted.wait(5), "and goes on once the deliverer took a batch"
    queue.drain()
    assert intake.delivered == list(range(8))


def test_drain_waits_for_what_was_submitted_before_it(queue: DeliveryQueue[int], intake: Intake) -> None:
    intake.hold.clear()
    queue.submit(1)
    queue.submit(2)
    drained = threading.Event()
    threading.Thread(target=lambda: (queue.drain(), drained.set()), daemon=True).start()
    assert not drained.wait(0.3), "a relist waits while older events are still on their way"
    intake.hold.set()
    assert drained.wait(5)
    assert intake.delivered == [1, 2]


def test_clear_drops_what_is_queued_and_releases_a_drain(queue: DeliveryQueue[int], intake: Intake) -> None:
    intake.hold.clear()
    queue.submit(1)
    wait_for(lambda: intake.batches == [[1]], message="a round trip in hand")
    queue.submit(2)
    queue.submit(3)
    assert queue.clear() == 2, "a watcher that lost its lease hands nothing more on"
    intake.hold.set()
    queue.drain()
    assert intake.delivered == [1]


def test_a_failing_delivery_does_not_end_the_thread(queue: DeliveryQueue[int], intake: Intake) -> None:
    intake.fail_next = True
    queue.submit(1)
    queue.drain()
    queue.submit(2)
    queue.drain()
    assert intake.delivered == [1, 2]
    assert queue.alive


def test_a_stopped_queue_takes_nothing(intake: Intake) -> None:
    queue: DeliveryQueue[int] = DeliveryQueue(intake).start()
    queue.stop()
    queue.submit(1)
    queue.drain()
    assert intake.delivered == []
    assert not queue.running

"""The Event recorder's sending side against an in-memory sink: folding occurrences into one request, retries
of transient errors, dropping after the last attempt, 404/409 recovery, the bounded queue and flush. (Against a real
API server: tests/integration/test_event_recorder.py; a fresh recorder in a forked child:
tests/integration/test_fresh_processes.py.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import tenacity

from poolboy import observability
from poolboy.kube import event_recorder
from poolboy.kube.event_recorder import Recorder
from poolboy.kube.events import Correlator, event_body
from tests.waiting import wait_for

OBJ = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns", "uid": "u"}}


class FakeError(Exception):
    def __init__(self, status: int, reason: str = "", transient: bool = False, retry_after: float | None = None):
        super().__init__(f"{status} {reason}")
        self.status, self.reason, self.transient, self.retry_after = status, reason, transient, retry_after


class Sink:
    """Records (verb, name, count) of every attempt; ``fail`` yields the error to raise per attempt (or None);
    ``work queue``, when set, holds every request until it is set."""

    def __init__(self, fail: Iterator[Exception | None] | None = None) -> None:
        self.attempts: list[tuple[str, str, int]] = []
        self.fail = fail
        self.work_queue: threading.Event | None = None
        self.entered = threading.Event()

    def _attempt(self, verb: str, name: str, count: int) -> dict:
        self.attempts.append((verb, name, count))
        self.entered.set()
        if self.work_queue is not None:
            assert self.work_queue.wait(10)
        error = next(self.fail, None) if self.fail is not None else None
        if error is not None:
            raise error
        return {}

    def create(self, body: dict) -> dict:
        return self._attempt("create", body["metadata"]["name"], body["count"])

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict) -> dict:
        assert (api_version, kind, namespace) == ("v1", "Event", "ns")
        return self._attempt("patch", name, patch["count"])


@pytest.fixture()
def outcomes() -> Iterator[list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    callback = observability.on_event(lambda outcome, detail: seen.append((outcome, detail)))
    yield seen
    observability.remove_event_callback(callback)


def recorder(**kwargs) -> Recorder:
    return Recorder(backoff=tenacity.wait_none(), **kwargs)


def emit(rec: Recorder, sink: Sink, reason: str = "Bound", message: str = "m") -> None:
    rec.record(sink, event_body(OBJ, reason, message, default_namespace="op"))


def wait_held(rec: Recorder) -> None:
    """Until a sender waits for the queue's head to fall due: the sign that it saw the Event and holds it back."""
    wait_for(lambda: rec._timed, message="a sender to hold the Event back")


def verbs(sink: Sink) -> list[tuple[str, int]]:
    return [(verb, count) for verb, _, count in sink.attempts]


def test_occurrences_during_a_send_are_folded_into_one_more_request(outcomes) -> None:
    rec, sink = recorder(), Sink()
    sink.work_queue = threading.Event()
    emit(rec, sink)
    assert sink.entered.wait(10)  # the create is in flight
    for _ in range(4):
        emit(rec, sink)
    assert outcomes == [("aggregated", "coalesced")] * 4
    sink.work_queue.set()
    assert rec.flush(10)
    assert verbs(sink) == [("create", 1), ("patch", 5)]
    assert len({name for _, name, _ in sink.attempts}) == 1
    assert outcomes[4:] == [("sent", "create"), ("sent", "patch")]


def test_repeats_after_a_send_patch_the_same_event() -> None:
    rec, sink = recorder(), Sink()
    for _ in range(3):
        emit(rec, sink)
        assert rec.flush(10)
    assert verbs(sink) == [("create", 1), ("patch", 2), ("patch", 3)]


def test_different_reasons_are_separate_creates() -> None:
    rec, sink = recorder(), Sink()
    emit(rec, sink, "A")
    emit(rec, sink, "B")
    assert rec.flush(10)
    assert verbs(sink) == [("create", 1), ("create", 1)] and sink.attempts[0][1] != sink.attempts[1][1]


def test_transient_errors_are_retried_until_sent(outcomes) -> None:
    rec = recorder()
    sink = Sink(iter([FakeError(500, transient=True), FakeError(429, transient=True), None]))
    emit(rec, sink)
    assert rec.flush(10)
    assert verbs(sink) == [("create", 1)] * 3 and outcomes == [("sent", "create")]


def test_after_the_last_attempt_the_request_is_dropped_and_the_next_one_carries_the_count(outcomes) -> None:
    rec = recorder(attempts=3)
    sink = Sink(iter([FakeError(503, transient=True)] * 3))
    emit(rec, sink)
    assert rec.flush(10)
    assert verbs(sink) == [("create", 1)] * 3 and outcomes == [("dropped", "error")]
    emit(rec, sink)  # the server never got the Event: create it, with both occurrences
    assert rec.flush(10)
    assert verbs(sink)[-1] == ("create", 2) and outcomes[-1] == ("sent", "create")


def test_permanent_errors_are_not_retried(outcomes) -> None:
    rec, sink = recorder(), Sink(iter([FakeError(403, "Forbidden")]))
    emit(rec, sink)
    assert rec.flush(10)
    assert verbs(sink) == [("create", 1)] and outcomes == [("dropped", "error")]


def test_a_patch_of_an_expired_event_creates_it_again() -> None:
    rec = recorder()
    sink = Sink(iter([None, FakeError(404, "NotFound"), None]))
    emit(rec, sink)
    assert rec.flush(10)
    emit(rec, sink)
    assert rec.flush(10)
    assert verbs(sink) == [("create", 1), ("patch", 2), ("create", 2)]


def test_a_create_that_already_happened_becomes_a_patch() -> None:
    rec = recorder()
    # the first answer is lost (network), the retry finds the Event there
    sink = Sink(iter([FakeError(0, "ConnectionReset", transient=True), FakeError(409, "AlreadyExists"), None]))
    emit(rec, sink)
    assert rec.flush(10)
    assert verbs(sink) == [("create", 1), ("create", 1), ("patch", 1)]


def test_wait_honours_retry_after_within_the_cap() -> None:
    rec = recorder()

    def state_after(error: Exception) -> tenacity.RetryCallState:
        state = tenacity.RetryCallState(None, None, (), {})
        state.set_exception((type(error), error, None))
        return state

    assert rec._wait(state_after(FakeError(429, transient=True, retry_after=3))) == 3
    assert rec._wait(state_after(FakeError(429, transient=True, retry_after=3600))) == event_recorder.BACKOFF_MAX
    assert rec._wait(state_after(FakeError(500, transient=True))) == 0


def test_a_full_queue_drops_and_counts(outcomes) -> None:
    rec, sink = recorder(queue_size=1, senders=1), Sink()
    sink.work_queue = threading.Event()
    emit(rec, sink, "A")
    assert sink.entered.wait(10)  # A is in flight, the queue is empty
    emit(rec, sink, "B")
    emit(rec, sink, "C")
    assert outcomes == [("dropped", "queue_full")]
    assert not rec.flush(0.05) and rec.pending() == 2
    sink.work_queue.set()
    assert rec.flush(10) and rec.pending() == 0
    assert [verb for verb, _ in verbs(sink)] == ["create", "create"]


def test_spam_filter_drops_occurrences_beyond_the_burst(outcomes) -> None:
    rec, sink = recorder(correlator=Correlator(burst=2)), Sink()
    for reason in "ABC":
        emit(rec, sink, reason)
    assert rec.flush(10)
    assert len(sink.attempts) == 2 and ("dropped", "spam") in outcomes


def test_events_wait_while_reconciles_run_and_go_when_the_last_one_ends() -> None:
    rec, sink = recorder(hold=60), Sink()
    rec.enter_foreground()
    rec.enter_foreground()
    emit(rec, sink)
    wait_held(rec)
    assert not sink.entered.is_set() and rec.pending() == 1, "two runs in the process: held"
    rec.leave_foreground()
    with rec._cond:
        assert rec._held_for(), "one run still goes on: the Event is still held"
    rec.leave_foreground()
    assert sink.entered.wait(10) and rec.flush(10)
    assert verbs(sink) == [("create", 1)]


def test_a_held_event_is_sent_once_its_hold_is_over_even_while_runs_go_on() -> None:
    rec, sink = recorder(hold=0.3), Sink()
    rec.enter_foreground()
    emit(rec, sink)
    assert sink.entered.wait(10) and rec.flush(10)
    assert rec._foreground == 1 and verbs(sink) == [("create", 1)]


def test_flush_sends_held_events_without_waiting_for_the_runs() -> None:
    rec, sink = recorder(hold=60), Sink()
    rec.enter_foreground()
    emit(rec, sink, "A")
    emit(rec, sink, "B")
    assert rec.flush(10) and rec.pending() == 0
    assert verbs(sink) == [("create", 1), ("create", 1)]
    sink.entered.clear()
    emit(rec, sink, "C")
    wait_held(rec)
    assert not sink.entered.is_set() and rec.pending() == 1, "flush is over: the next Event is held again"


def test_foreground_wraps_a_run_in_the_process_recorder() -> None:
    current = event_recorder.recorder()
    before = current._foreground
    with event_recorder.foreground():
        assert current._foreground == before + 1
    assert current._foreground == before

"""A reconcile's cooperative stop points (poolboy.utils.cancellation): its soft time limit and a request to stop,
raised at the next checkpoint, once; nothing outside a run."""

from __future__ import annotations

import threading
import time

import pytest

from poolboy.utils import cancellation
from poolboy.utils.cancellation import RunTimeLimitExceeded


class Stop(BaseException):
    pass


def test_checkpoint_outside_a_run_does_nothing():
    cancellation.checkpoint()
    started = time.monotonic()
    cancellation.wait(0.05)
    assert time.monotonic() - started >= 0.05


def test_soft_time_limit_ends_the_run_at_its_next_checkpoint_once():
    with cancellation.scope(soft_limit=0.05):
        cancellation.checkpoint()  # within the limit
        time.sleep(0.06)
        with pytest.raises(RunTimeLimitExceeded, match=r"soft time limit of 0\.05s"):
            cancellation.checkpoint()
        cancellation.checkpoint()  # raised once, as Celery's soft limit: the run's clean-up goes on


def test_a_stop_request_takes_effect_after_its_grace_and_cuts_a_wait_short():
    with cancellation.scope() as scope:
        scope.stop_after(0.2, Stop)
        cancellation.checkpoint()  # the grace has not ended
        started = time.monotonic()
        with pytest.raises(Stop):
            cancellation.wait(600)
        assert 0.15 <= time.monotonic() - started < 2
        cancellation.checkpoint()  # once


def test_a_later_request_never_postpones_an_earlier_one():
    with cancellation.scope() as scope:
        scope.stop_after(0.0, Stop)
        scope.stop_after(600, RuntimeError)
        with pytest.raises(Stop):
            cancellation.checkpoint()


def test_each_thread_has_its_own_run_and_the_previous_scope_comes_back():
    seen: list[str] = []
    with cancellation.scope() as outer:
        outer.stop_after(0.0, Stop)

        def other_run() -> None:
            with cancellation.scope():
                cancellation.checkpoint()
                seen.append("other run not stopped")
            cancellation.checkpoint()
            seen.append("no run after it")

        thread = threading.Thread(target=other_run)
        thread.start()
        thread.join(5)
        with cancellation.scope():
            cancellation.checkpoint()  # a nested scope is a run of its own
        with pytest.raises(Stop):
            cancellation.checkpoint()
    assert seen == ["other run not stopped", "no run after it"]

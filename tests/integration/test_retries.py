"""A failed run waits the rate limiter's backoff on the runtime's clock, and a success forgets its failures (the
engine's end of a run against a real redis-server; the clock is a FakeClock, so nothing sleeps)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from engine import own_writes, runner, runtime
from engine.outcome import Succeeded
from poolboy.result import TransientError
from poolboy.settings import Settings
from stack.testing import RedisServer
from workers.app import app
from workers.messages import CeleryPublisher
from workqueue.clock import FakeClock

KEY = "claim/demo/flaky"


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def rt(redis_server: RedisServer, clock: FakeClock) -> Iterator[runtime.Runtime]:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    settings = Settings(read_cache=False, retry_backoff_max=300.0, retry_backoff_api_max=5.0)
    yield runtime.build(CeleryPublisher(app), settings, None, client, clock)
    client.close()


def _fail(rt: runtime.Runtime, error: BaseException, token: str) -> float:
    """One run of :data:`KEY` that fails with ``error``: the backoff it was given."""
    assert rt.queue.start(KEY, token) is not None
    outcome = runner._failed(rt, "claim", KEY, error)
    runner.finish(rt, "claim", KEY, token, outcome, own_writes.Collector(), None)
    return outcome.retry_in


def test_a_failed_run_is_released_when_its_backoff_has_passed_on_the_clock(rt, clock) -> None:
    delay = _fail(rt, TransientError("API away", retry_after=30.0), "t1")
    assert delay == 30.0, "Retry-After honoured"
    clock.advance(29.9)
    assert rt.delaying.release_due() == []
    clock.advance(0.1)
    assert [added.outcome for added in rt.delaying.release_due()] == ["published"]


def test_an_api_faults_backoff_stays_within_its_cap_and_a_success_forgets_it(rt, clock) -> None:
    for attempt in range(8):
        assert _fail(rt, TransientError("API away"), f"t{attempt}") <= 5.0
        clock.advance(5.0)
        assert [added.outcome for added in rt.delaying.release_due()] == ["published"]
    assert rt.limiter.num_requeues(KEY) == 8
    assert rt.queue.start(KEY, "ok") is not None
    runner.finish(rt, "claim", KEY, "ok", Succeeded(), own_writes.Collector(), None)
    assert rt.limiter.num_requeues(KEY) == 0


def test_a_bugs_backoff_grows_past_the_api_cap(rt) -> None:
    delays = [_fail(rt, RuntimeError("bug"), f"t{attempt}") for attempt in range(12)]
    assert max(delays) > 5.0 and max(delays) <= 300.0

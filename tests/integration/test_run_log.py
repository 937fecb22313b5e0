"""The run log's "announce a permanent error once" memory on a real Redis: a permanent error is logged as a warning
the first time and after each change, quietly while it stays the same, and as news again after a success."""

from __future__ import annotations

import logging

import pytest
import redis

from engine import own_writes, run_log, runner, runtime
from engine.outcome import Succeeded
from poolboy.result import PermanentError
from poolboy.settings import Settings
from workers.app import app
from workers.messages import CeleryPublisher

KEY = "claim/demo/hello"


@pytest.fixture()
def client(bytes_client: redis.Redis) -> redis.Redis:
    return bytes_client


def test_a_permanent_error_is_announced_once_per_change(client: redis.Redis) -> None:
    error = PermanentError("ValidationFailed", "spec.x: bad", recheck_after=300)
    assert run_log.permanent_level(client, KEY, error, 300) == logging.WARNING
    assert run_log.permanent_level(client, KEY, error, 300) == logging.DEBUG, "the same error again: not news"
    changed = PermanentError("ValidationFailed", "spec.x: still bad", recheck_after=300)
    assert run_log.permanent_level(client, KEY, changed, 300) == logging.WARNING
    assert run_log.permanent_level(client, KEY, changed, 300) == logging.DEBUG
    assert 0 < client.ttl(run_log.logged_key(KEY)) <= 300, "announced again after the re-check interval"


def test_a_success_forgets_the_announced_error(client: redis.Redis) -> None:
    error = PermanentError("ValidationFailed", "spec.x: bad")
    assert run_log.permanent_level(client, KEY, error, 300) == logging.WARNING
    rt = runtime.build(CeleryPublisher(app), Settings(read_cache=False), None, client)
    rt.queue.start(KEY, "t1")
    runner.finish(rt, "claim", KEY, "t1", Succeeded(), own_writes.Collector(), None)
    assert run_log.permanent_level(client, KEY, error, 300) == logging.WARNING, "broken again after a fix is news"

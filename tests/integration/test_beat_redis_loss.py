"""Beat (celery-redbeat) survives Redis losing everything: FLUSHALL, and a restart of redis-server without data.

Stock redbeat would exit (its lock extension fails) or tick an empty schedule forever; ``workers.beat_scheduler``
takes the lock again and re-installs the schedule, so its sweeps are published again. The schedule can also
be lost without the lock (Redis flushed while a starting beat waited for the lock): it is installed again too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from stack.testing import BeatProcess, RedisServer
from tests.waiting import wait_for

LOCK_KEY = "poolboy:beat::lock"
SWEEP_ENTRY = "poolboy:beat:manage-pools"


@pytest.fixture()
def own_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def sweeps_published(r: redis.Redis) -> int:
    """Messages waiting on the ``periodic`` queue (no worker consumes them here)."""
    return int(r.llen("periodic"))


def beat_is_ticking(r: redis.Redis) -> bool:
    return bool(r.get(LOCK_KEY)) and r.exists(SWEEP_ENTRY) == 1 and sweeps_published(r) > 0


@contextmanager
def ticking_beat(server: RedisServer) -> Iterator[tuple[redis.Redis, BeatProcess]]:
    """A beat on ``server`` with a 1 s pool sweep and a 5 s lock, once it ticks; and a client of that Redis."""
    r = redis.Redis.from_url(server.url, decode_responses=True)
    env = {"POOLBOY_MANAGE_POOLS_INTERVAL": "1", "POOLBOY_BEAT_LOCK_TIMEOUT": "5"}
    with BeatProcess(server.url, env=env) as beat:
        wait_for(lambda: beat_is_ticking(r), timeout=20, message="beat ticking")
        yield r, beat


@pytest.mark.slow
def test_beat_recovers_its_lock_and_schedule_after_flushall_and_restart(own_redis: RedisServer) -> None:
    with ticking_beat(own_redis) as (r, beat):
        r.flushall()
        wait_for(lambda: beat_is_ticking(r), timeout=20, message=f"beat ticking after FLUSHALL\n{beat.log()[-3000:]}")

        own_redis.stop()
        own_redis.start()  # same port, no persistence: an empty Redis
        r = redis.Redis.from_url(own_redis.url, decode_responses=True)
        wait_for(lambda: beat_is_ticking(r), timeout=30,
                 message=f"beat ticking after a Redis restart\n{beat.log()[-3000:]}")
        assert beat.process is not None and beat.process.poll() is None, "beat exited"
        assert "waiting for it" in beat.log()


@pytest.mark.slow
def test_beat_installs_its_schedule_again_when_it_is_lost_but_the_lock_is_not(own_redis: RedisServer) -> None:
    """What a FLUSHALL between a starting beat's schedule install and its lock leaves: a held lock, no schedule."""
    with ticking_beat(own_redis) as (r, beat):
        lock = r.get(LOCK_KEY)
        r.delete(*[key for key in r.scan_iter() if key != LOCK_KEY])
        assert r.get(LOCK_KEY) == lock and not r.exists(SWEEP_ENTRY)

        wait_for(lambda: beat_is_ticking(r), timeout=20,
                 message=f"beat ticking again after losing its schedule\n{beat.log()[-3000:]}")
        assert r.get(LOCK_KEY) == lock, "the same beat kept its lock"
        assert "the schedule is gone from Redis" in beat.log()


@pytest.mark.slow
def test_a_beat_started_before_its_redis_waits_for_it_and_ticks(own_redis: RedisServer) -> None:
    """The chart starts beat and Redis together: a beat whose Redis is not up yet waits instead of exiting."""
    own_redis.stop()
    r = redis.Redis.from_url(own_redis.url, decode_responses=True)
    env = {"POOLBOY_MANAGE_POOLS_INTERVAL": "1", "POOLBOY_BEAT_LOCK_TIMEOUT": "5"}
    with BeatProcess(own_redis.url, env=env) as beat:
        wait_for(lambda: "Redis unreachable at start" in beat.log(), timeout=20,
                 message=f"beat waiting for Redis\n{beat.log()[-3000:]}")
        assert beat.process is not None and beat.process.poll() is None, f"beat exited\n{beat.log()[-3000:]}"
        own_redis.start()
        wait_for(lambda: beat_is_ticking(r), timeout=30, message=f"beat ticking once Redis is up\n{beat.log()[-3000:]}")

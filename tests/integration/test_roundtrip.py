"""One round trip of several steps (workqueue/roundtrip.py), against a real redis-server: each step answers on its
own handle what it would have answered alone, a failing step answers its error without stopping the others, atomic
steps run as one script, and a flushed script cache is survived."""

from __future__ import annotations

import pytest
import redis

from redisscripts import Call
from redisscripts.combined import MAX_COMBINED
from workqueue import keyspace
from workqueue.queue import WorkQueue
from workqueue.roundtrip import RoundTrip

COUNTER = "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) return {v, #ARGV, KEYS[1]}"
FAILING = "redis.call('INCR', KEYS[1]) return redis.call('HGET', KEYS[1], 'f')"  # WRONGTYPE after the INCR
NOTHING = "redis.call('SET', KEYS[1], ARGV[1])"


def _evalshas(r: redis.Redis) -> int:
    return int(r.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def test_each_step_answers_on_its_own_handle(rb: redis.Redis) -> None:
    counter = rb.register_script(COUNTER)
    nothing = rb.register_script(NOTHING)
    trip = RoundTrip(rb)
    first = trip.call(Call(counter, ["a"], [2, "x"]))
    stored = trip.call(Call(nothing, ["b"], ["v"]))
    plain = trip.command("GET", "b")
    read = trip.call(Call(counter, ["a"], [3], read=lambda reply: int(reply[0])))
    trip.send()
    assert first.value == [2, 2, b"a"] and stored.value is None and plain.value == b"v" and read.value == 5


def test_a_failing_step_answers_its_error_and_the_others_still_run(rb: redis.Redis) -> None:
    counter = rb.register_script(COUNTER)
    failing = rb.register_script(FAILING)
    trip = RoundTrip(rb)
    first, broken, last = (trip.call(Call(counter, ["a"], [1])), trip.call(Call(failing, ["f"], [])),
                           trip.call(Call(counter, ["a"], [1])))
    trip.send()
    assert first.value[0] == 1 and last.value[0] == 2
    assert isinstance(broken.error, redis.ResponseError) and "WRONGTYPE" in str(broken.error)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        broken.value  # noqa: B018
    assert rb.get("f") == b"1"  # as on a pipeline: a script is no transaction


def test_a_handle_read_before_the_trip_is_sent_says_so(rb: redis.Redis) -> None:
    trip = RoundTrip(rb)
    reply = trip.command("PING")
    with pytest.raises(RuntimeError, match="not been sent"):
        reply.value  # noqa: B018


def test_atomic_steps_are_one_script(rb: redis.Redis) -> None:
    counter = rb.register_script(COUNTER)
    trip = RoundTrip(rb)
    trip.atomic(Call(counter, ["a"], [1]), Call(counter, ["b"], [1]))
    before = _evalshas(rb)
    trip.send()
    assert _evalshas(rb) - before in (1, 2), "one EVALSHA (twice only for the first load of the combined script)"
    with pytest.raises(ValueError):
        RoundTrip(rb).atomic(*[Call(counter, ["a"], [1])] * (MAX_COMBINED + 1))


def test_many_scripts_go_as_few_evalshas_and_survive_a_flushed_script_cache(rb: redis.Redis) -> None:
    counter = rb.register_script(COUNTER)

    def send() -> list[int]:
        trip = RoundTrip(rb)
        replies = [trip.call(Call(counter, [f"k{i}"], [i])) for i in range(MAX_COMBINED + 5)]
        trip.send()
        return [reply.value[0] for reply in replies]

    send()  # loads the combined scripts
    rb.script_flush()  # a restarted or flushed Redis has no scripts
    rb.flushall()
    before = _evalshas(rb)
    assert send() == list(range(MAX_COMBINED + 5))
    assert _evalshas(rb) - before == 4, "two chunks, each sent twice: NOSCRIPT, then again once loaded"
    before = _evalshas(rb)
    send()
    assert _evalshas(rb) - before == 2


def test_queue_steps_in_one_trip_keep_their_decisions(rb: redis.Redis) -> None:
    queue = WorkQueue(rb, lease_seconds=5, pending_ttl=60, stale_seconds=60)
    trip = RoundTrip(rb)
    replies = [trip.call(queue.add_call(key)) for key in ("claim/ns/a", "claim/ns/b", "claim/ns/a")]
    trip.send()
    assert [reply.value.outcome for reply in replies] == ["published", "published", "coalesced"]
    assert rb.exists(keyspace.pending("claim/ns/a")) and rb.exists(keyspace.pending("claim/ns/b"))

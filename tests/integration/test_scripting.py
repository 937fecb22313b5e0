"""Several Lua scripts as one EVALSHA (workqueue/scripting.py), against a real redis-server: each part answers what it
would have answered alone, a failing part answers its error without stopping the others, and a flushed script cache
is survived."""

from __future__ import annotations

import pytest
import redis

from workqueue import scripting
from workqueue.queue import Gate, pending_key

COUNTER = "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) return {v, #ARGV, KEYS[1]}"
FAILING = "redis.call('INCR', KEYS[1]) return redis.call('HGET', KEYS[1], 'f')"  # WRONGTYPE after the INCR
NOTHING = "redis.call('SET', KEYS[1], ARGV[1])"


def _evalshas(r: redis.Redis) -> int:
    return int(r.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def test_parts_answer_as_each_script_alone_in_order(rb: redis.Redis) -> None:
    counter = rb.register_script(COUNTER)
    nothing = rb.register_script(NOTHING)
    calls = [(counter, ["a"], [2, "x"]), (nothing, ["b"], ["v"]), (counter, ["a"], [3]), (counter, ["c"], [1])]
    assert scripting.evalsha_combined(rb, calls) == [[2, 2, b"a"], None, [5, 1, b"a"], [1, 1, b"c"]]
    assert rb.get("b") == b"v"
    rb.flushall()
    assert scripting.evalsha_pipelined(rb, calls) == [[2, 2, b"a"], None, [5, 1, b"a"], [1, 1, b"c"]]


def test_a_failing_part_answers_its_error_and_the_others_still_run(rb: redis.Redis) -> None:
    counter = rb.register_script(COUNTER)
    failing = rb.register_script(FAILING)
    calls = [(counter, ["a"], [1]), (failing, ["f"], []), (counter, ["a"], [1])]
    first, error, last = scripting.evalsha_combined(rb, calls, raise_on_error=False)
    assert first[0] == 1 and last[0] == 2
    assert isinstance(error, redis.ResponseError) and "WRONGTYPE" in str(error)
    assert rb.get("f") == b"1"  # as on a pipeline: a script is no transaction
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        scripting.evalsha_combined(rb, calls)


def test_many_scripts_go_as_few_evalshas_and_survive_a_flushed_script_cache(rb: redis.Redis) -> None:
    counter = rb.register_script(COUNTER)
    calls = [(counter, [f"k{i}"], [i]) for i in range(scripting.MAX_COMBINED + 5)]
    scripting.evalsha_combined(rb, [(counter, ["warm"], [1])] * 2)  # loads the combined script of counters
    rb.script_flush()  # a restarted or flushed Redis has no scripts
    before = _evalshas(rb)
    replies = scripting.evalsha_combined(rb, calls)
    assert [reply[0] for reply in replies] == list(range(len(calls)))
    # two chunks, each sent twice: NOSCRIPT, then again once loaded
    assert _evalshas(rb) - before == 4
    before = _evalshas(rb)
    scripting.evalsha_combined(rb, calls)
    assert _evalshas(rb) - before == 2


def test_gate_scripts_combined_keep_their_decisions(rb: redis.Redis) -> None:
    gate = Gate(rb, lease_seconds=5, pending_ttl=60, stale_seconds=60)
    keys = ["claim/ns/a", "claim/ns/b", "claim/ns/a"]
    outcomes = [gate.add_result(key, reply) for key, reply in
                zip(keys, scripting.evalsha_combined(rb, [gate.add_call(key, push=False) for key in keys]),
                    strict=True)]
    assert [outcome for outcome, _ in outcomes] == ["published", "published", "coalesced"]
    assert rb.exists(pending_key("claim/ns/a")) and rb.exists(pending_key("claim/ns/b"))

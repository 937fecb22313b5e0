"""The benchmark's Redis-commands-by-purpose classification, on MONITOR lines as redis-cli prints them."""

from __future__ import annotations

from benchmarks import redispurpose

LINES = r'''OK
1795825821.01 [0 127.0.0.1:1] "BRPOP" "periodic" "claims" "1"
1795825821.02 [0 127.0.0.1:1] "MULTI"
1795825821.03 [0 127.0.0.1:1] "ZADD" "unacked_index" "1.5" "tag"
1795825821.04 [0 127.0.0.1:1] "HSET" "unacked" "tag" "[...]"
1795825821.05 [0 127.0.0.1:1] "EXEC"
1795825821.06 [0 127.0.0.1:2] "EVALSHA" "abc" "1" "poolboy:queue:{claim/ns/a}:pending"
1795825821.07 [0 lua] "SISMEMBER" "poolboy:ownwrites:{claim/ns/a}" "u/1"
1795825821.08 [0 lua] "MGET" "poolboy:queue:{claim/ns/a}:pending" "poolboy:queue:{claim/ns/a}:active"
1795825821.09 [0 lua] "TIME"
1795825821.10 [0 lua] "LPUSH" "claims" "{}"
1795825821.11 [0 127.0.0.1:2] "EVALSHA" "def" "1" "poolboy:cache:o:v1|Namespace||default" "2" "{}"
1795825821.12 [0 lua] "HMGET" "poolboy:cache:o:v1|Namespace||default" "rv" "idx" "tomb"
1795825821.13 [0 lua] "TIME"
1795825821.14 [0 127.0.0.1:3] "PUBLISH" "/0.celeryev/task.multi" "{}"
1795825821.15 [0 127.0.0.1:4] "INFO" "commandstats"
1795825821.16 [0 127.0.0.1:4] "HGET" "something:else" "f"
'''


def test_commands_are_counted_by_what_they_are_for() -> None:
    counts = redispurpose.classify(LINES.splitlines())
    assert counts == {
        "broker": 2,  # BRPOP; the queue script's LPUSH publishes
        "broker: unacked": 4,
        "work queue": 3,  # the script call, its MGET and its clock
        "own writes": 1,
        "cache": 3,  # the put script, its HMGET, its clock
        "broker: task events": 1,
        "other": 1,
    }, "INFO is the benchmark's own"


def test_per_claim_puts_the_total_first() -> None:
    figures = redispurpose.per_claim(redispurpose.classify(LINES.splitlines()), 2)
    assert list(figures)[:2] == ["total", "broker: unacked"]
    assert figures["total"] == 7.5


def test_a_script_call_is_named_by_the_script_it_runs() -> None:
    import hashlib

    from workqueue import keyspace
    from workqueue.queue import START

    sha = hashlib.sha1(START.source.encode()).hexdigest()
    tally = redispurpose.Tally()
    tally.feed(False, ["EVALSHA", sha, "3", keyspace.pending("claim/ns/a"), keyspace.active("claim/ns/a"),
                       keyspace.LEASES])
    tally.feed(False, ["EVALSHA", "0" * 40, "1", keyspace.pending("claim/ns/b")])
    assert tally.detail == {"work queue: EVALSHA workqueue/start": 1,
                            "work queue: EVALSHA poolboy:queue:…:pending": 1}, \
        "an unknown script is named by its first key's shape"

"""Pure helpers of the benchmark instruments: MONITOR parsing and round trips, log ready lines, the ratio table,
the proxy's connection lines, setup.sh's assignments."""

from __future__ import annotations

import re
from datetime import datetime

from benchmarks import compare, latency_proxy, redis_rtt, systems


def test_monitor_line_is_parsed_with_quoted_arguments() -> None:
    line = '+1732486369.123456 [0 127.0.0.1:54321] "EVALSHA" "ab12" "1" "work queue:{claim/a \\"b\\"}:pending" "x"'
    command = redis_rtt.parse_line(line)
    assert command is not None
    assert command.ts == 1732486369.123456 and command.client == "127.0.0.1:54321"
    assert command.name == "evalsha"
    assert command.key == 'work queue:{claim/a \\"b\\"}:pending'
    assert redis_rtt.parse_line("+OK") is None
    assert redis_rtt.parse_line('1.5 [0 lua] "HGET" "k" "f"').client == "lua"


def test_purpose_by_key_prefix() -> None:
    def purpose(text: str) -> str:
        command = redis_rtt.parse_line(f'1.0 [0 127.0.0.1:1] {text}')
        assert command is not None
        return redis_rtt.purpose(command)

    assert purpose('"BRPOP" "claims" "claims\\x06\\x163" "1"') == "broker"
    assert purpose('"LPUSH" "periodic" "msg"') == "broker"
    assert purpose('"SADD" "_kombu.binding_permanent.periodic" "x"') == "broker"
    assert purpose('"EVALSHA" "s" "1" "poolboy:queue:{claim/ns/a}:pending"') == "work queue"
    assert purpose('"EVALSHA" "s" "1" "poolboy:ownwrites:{claim/ns/a}"') == "own writes"
    assert purpose('"SINTER" "poolboy:cache:i:label|x"') == "index"
    assert purpose('"HGET" "poolboy:cache:o:x" "f"') == "cache"
    assert purpose('"ZADD" "poolboy:queue:due" "1" "k"') == "due"
    assert purpose('"GET" "poolboy:beat::lock"') == "beat"
    assert purpose('"PING"') == "connection"
    assert purpose('"GET" "something-else"') == "other"


def test_round_trips_split_on_pauses_longer_than_the_gap() -> None:
    commands = [redis_rtt.Command(ts, "c", "get", ("k",)) for ts in (0.0, 0.0001, 0.011, 0.0112, 0.03)]
    groups = redis_rtt.round_trips(commands, gap_s=0.005)
    assert [len(g) for g in groups] == [2, 2, 1]


def test_analyse_counts_the_window_and_leaves_background_out() -> None:
    worker = [redis_rtt.Command(ts, "w:1", "get", ("poolboy:cache:o:x",)) for ts in (1.00, 1.02, 1.04)]
    beat = [redis_rtt.Command(1.03, "b:1", "get", ("poolboy:beat::lock",))]
    outside = [redis_rtt.Command(5.0, "w:1", "get", ("k",)), redis_rtt.Command(1.01, "lua", "hget", ("k",))]
    result = redis_rtt.analyse(worker + beat + outside, 1.0, 2.0, 0.005, {"w:1": "worker-0", "b:1": "beat"})
    assert result["commands"] == 4 and result["commands_in_scripts"] == 1
    assert result["critical_path"]["round_trips"] == 4
    assert result["critical_path_without_background"]["round_trips"] == 3
    assert result["by_purpose"] == {"cache": 3, "beat": 1}


def test_first_ready_time_reads_both_log_formats() -> None:
    watcher = ["2026-11-24 22:52:49,443 INFO watcher.leader: x acquired leadership",
               "2026-11-24 22:52:49,482 INFO watcher.main: x: watching"]
    celery = ["[2026-11-24 22:52:50,927: INFO/MainProcess] Connected to redis://",
              "[2026-11-24 22:52:50,978: INFO/MainProcess] worker0@vm ready."]
    expect = datetime(2026, 11, 24, 22, 52, 49, 482000).timestamp()
    assert systems.first_ready_time(watcher, systems.COMPONENT_READY["watcher"]) == expect
    assert systems.first_ready_time(celery, systems.COMPONENT_READY["worker"]) == \
        datetime(2026, 11, 24, 22, 52, 50, 978000).timestamp()
    assert systems.first_ready_time(celery, re.compile("never")) is None


def test_setup_assignments_and_proxy_connections() -> None:
    assert systems.parse_assignments("UPSTREAM_POOLBOY=/a/b\nnoise\nUPSTREAM_PYTHON=/v/python\n") == {
        "UPSTREAM_POOLBOY": "/a/b", "UPSTREAM_PYTHON": "/v/python"}
    assert latency_proxy.parse_connections(["listening on 5", "connection 40000 -> 40001"]) == {40000: 40001}


def test_ratio_rows_compare_medians_and_minimums() -> None:
    def burst(median: float, minimum: float) -> dict:
        return {"all_bound_s": {"median": median, "min": minimum}}

    rows = compare.ratio_rows({"W1": burst(2.0, 1.0), "W6": {"1": burst(8.0, 8.0), "8": burst(1.0, 1.0)},
                               "W5": burst(1.0, 1.0)},
                              {"W1": burst(4.0, 4.0), "W6": {"1": burst(10.0, 5.0)}})
    by_workload = {row["workload"]: row for row in rows if row["figure"] == "all bound s"}
    assert by_workload["W1"]["ratio_median"] == 0.5 and by_workload["W1"]["ratio_min"] == 0.25
    assert by_workload["W6 8w"]["ratio_median"] == 0.1  # every worker count against upstream's one run
    assert "W5" not in by_workload  # upstream did not run it
    assert "all bound s" in compare.render(rows)


def test_upstream_ready_line() -> None:
    line = "upstream poolboy ready in 1.23s: kopf up, 6 watches, api http://127.0.0.1:4242"
    match = systems.UPSTREAM_READY.search(line)
    assert match is not None and match.group("kopf") == "1.23" and match.group(2) == "http://127.0.0.1:4242"

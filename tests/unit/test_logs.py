"""Operator logs: the JSON formatter, the object key on records, demoted library lines, the ``--log-level`` and
``--log-format`` options of every sub-command, and the "announce a permanent error once" memory (real Redis)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import redis

from engine import own_writes, run_log, runner, runtime
from engine.outcome import Succeeded
from poolboy import logs
from poolboy.result import PermanentError
from poolboy.settings import Settings
from stack.cli import COMMANDS, build_parser
from stack.testing import RedisServer
from workers.app import app
from workers.messages import CeleryPublisher

KEY = "claim/demo/hello"


def capture(name: str, fmt: str = "json", level: int = logging.DEBUG) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.formatter(fmt))
    logs.decorate(handler, fmt)
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(level)
    return logger, stream


def test_json_lines_carry_time_level_logger_message_and_the_bound_object() -> None:
    logger, stream = capture("test.logs.json")
    with logs.bind_key(KEY):
        logger.info("bound %s", "here")
    logger.warning("unbound")
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed")
    first, second, third = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "bound here" and first["level"] == "INFO" and first["logger"] == "test.logs.json"
    assert (first["kind"], first["namespace"], first["name"]) == ("claim", "demo", "hello")
    assert first["time"].endswith("Z")
    assert "kind" not in second, "no object fields outside a bound block"
    assert "ValueError: boom" in third["exception"]


def test_text_format_keeps_one_line_per_record() -> None:
    logger, stream = capture("test.logs.text", fmt="text")
    logger.info("plain")
    assert stream.getvalue().strip().endswith("INFO test.logs.text: plain")


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        logs.formatter("xml")


def test_demoted_lines_show_only_at_debug_and_warnings_stay() -> None:
    logger, stream = capture("test.logs.demoted", fmt="text", level=logging.INFO)
    logs.demote("test.logs.demoted", lambda record: str(record.msg).startswith("routine"))
    logger.info("routine tick")
    logger.info("start-up")
    logger.warning("routine but a warning")
    assert [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()] == ["start-up", "routine but a warning"]
    logger.setLevel(logging.DEBUG)
    logger.info("routine tick")
    assert stream.getvalue().splitlines()[-1].endswith("DEBUG test.logs.demoted: routine tick")


LOGGING_COMMANDS = [name for name in COMMANDS if name != "crds"]


@pytest.mark.parametrize("command", LOGGING_COMMANDS)
def test_every_sub_command_takes_log_level_and_log_format(command: str) -> None:
    parser = build_parser()
    args = parser.parse_args([command, "--log-level", "debug", "--log-format", "json"])
    assert (args.log_level, args.log_format) == ("DEBUG", "json")
    for old in (["--loglevel", "warning"], ["-l", "warning"]):  # the earlier spelling still works, hidden
        assert parser.parse_args([command, *old]).log_level == "WARNING"
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--log-format", "xml"])


def test_help_shows_one_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["worker", "--help"])
    shown = capsys.readouterr().out
    assert "--log-level" in shown and "--loglevel" not in shown


@pytest.fixture(scope="module")
def client() -> Iterator[redis.Redis]:
    with RedisServer() as server:
        connection = redis.Redis.from_url(server.url)
        yield connection
        connection.close()


def test_a_permanent_error_is_announced_once_per_change(client: redis.Redis) -> None:
    client.flushall()
    error = PermanentError("ValidationFailed", "spec.x: bad", recheck_after=300)
    assert run_log.permanent_level(client, KEY, error, 300) == logging.WARNING
    assert run_log.permanent_level(client, KEY, error, 300) == logging.DEBUG, "the same error again: not news"
    changed = PermanentError("ValidationFailed", "spec.x: still bad", recheck_after=300)
    assert run_log.permanent_level(client, KEY, changed, 300) == logging.WARNING
    assert run_log.permanent_level(client, KEY, changed, 300) == logging.DEBUG
    assert 0 < client.ttl(run_log.logged_key(KEY)) <= 300, "announced again after the re-check interval"


def test_a_success_forgets_the_announced_error(client: redis.Redis) -> None:
    client.flushall()
    error = PermanentError("ValidationFailed", "spec.x: bad")
    assert run_log.permanent_level(client, KEY, error, 300) == logging.WARNING
    rt = runtime.build(CeleryPublisher(app), Settings(read_cache=False), None, client)
    rt.queue.start(KEY, "t1")
    runner.finish(rt, "claim", KEY, "t1", Succeeded(), own_writes.Collector(), None)
    assert run_log.permanent_level(client, KEY, error, 300) == logging.WARNING, "broken again after a fix is news"

"""Intervals and timestamps (docs/behaviour.md#conventions, #lifespans)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolboy.utils import timeutil
from poolboy.utils.timeutil import (
    format_interval,
    format_single_unit,
    format_timestamp,
    freeze,
    parse_interval,
    parse_timestamp,
    set_clock,
    utcnow,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30m", 1800),
        ("1d12h", 129600),
        ("1d2h30m", 95400),
        ("90", 90),
        ("1h 30m", 5400),
        ("0s", 0),
        ("0", 0),
        ("45s", 45),
        ("1d", 86400),
        ("2h", 7200),
        ("1w", 604800),
        (" 5m ", 300),
        ("1.5h", 5400),
        ("36h", 129600),
        ("10 minutes", 600),
        (90, 90),
        (1.5, 1.5),
        (timedelta(minutes=3), 180),
    ],
)
def test_parse_interval(text, seconds):
    assert parse_interval(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("bad", ["garbage", "", "   ", "1x", "m30", "{{ x }}", None, [], True, "30mm"])
def test_parse_interval_rejects_garbage_with_clear_message(bad):
    with pytest.raises(ValueError, match="invalid interval"):
        parse_interval(bad)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1, "1s"),
        (59, "59s"),
        (60, "1m"),
        (1800, "30m"),
        (3600, "1h"),
        (86400, "1d"),
        (95400, "1d2h30m"),
        (129600, "1d12h"),
        (90061, "1d1h1m1s"),
        (3601, "1h1s"),
        (-1800, "-30m"),
        (timedelta(days=2, seconds=5), "2d5s"),
        (timedelta(seconds=1.4), "1s"),
    ],
)
def test_format_interval(seconds, text):
    assert format_interval(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (60, "1m"),
        (5400, "90m"),
        (129600, "36h"),
        (86400, "1d"),
        (172800, "2d"),
        (3601, "3601s"),
        (95400, "1590m"),
        (timedelta(hours=1, minutes=30), "90m"),
    ],
)
def test_format_single_unit(seconds, text):
    assert format_single_unit(seconds) == text


def test_format_single_unit_rejects_negative():
    with pytest.raises(ValueError):
        format_single_unit(-5)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01T00:00:00Z", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-01-01T22:00:00Z", datetime(2024, 1, 1, 22, tzinfo=UTC)),
        ("2024-01-01T00:00:00.123456Z", datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2024-01-01T02:00:00+02:00", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-01-01T00:00:00", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-01-01T00:00:00z", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2023-12-31T19:00:00-05:00", datetime(2024, 1, 1, tzinfo=UTC)),
    ],
)
def test_parse_timestamp(text, expected):
    parsed = parse_timestamp(text)
    assert parsed == expected
    assert parsed.tzinfo == UTC


@pytest.mark.parametrize("bad", ["", "yesterday", "2024-13-01T00:00:00Z", "2024-01-01T25:00:00Z", 5, None])
def test_parse_timestamp_rejects(bad):
    with pytest.raises(ValueError, match="invalid timestamp"):
        parse_timestamp(bad)


def test_parse_timestamp_accepts_datetimes():
    naive = datetime(2024, 1, 1)
    assert parse_timestamp(naive) == datetime(2024, 1, 1, tzinfo=UTC)
    offset = datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert parse_timestamp(offset) == datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2024, 1, 2, 1, 0, 0, tzinfo=UTC), "2024-01-02T01:00:00Z"),
        (datetime(2024, 1, 2, 1, 0, 0, 999999, tzinfo=UTC), "2024-01-02T01:00:00Z"),
        (datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05Z"),
        (datetime(2024, 1, 2, 3, 0, 0, tzinfo=timezone(timedelta(hours=3))), "2024-01-02T00:00:00Z"),
    ],
)
def test_format_timestamp(value, text):
    assert format_timestamp(value) == text


def test_utcnow_is_whole_seconds_and_aware():
    now = utcnow()
    assert now.microsecond == 0
    assert now.tzinfo == UTC


def test_freeze_and_restore():
    with freeze("2024-05-05T10:00:00.75Z") as frozen:
        assert utcnow() == datetime(2024, 5, 5, 10, tzinfo=UTC) == frozen
    assert utcnow().year >= 2024
    assert timeutil._clock is timeutil._system_clock


def test_set_clock_returns_previous_and_none_restores():
    previous = set_clock(lambda: datetime(2030, 1, 1, 0, 0, 0, 500))
    try:
        assert utcnow() == datetime(2030, 1, 1, tzinfo=UTC)
    finally:
        set_clock(None)
    assert previous is timeutil._system_clock
    assert timeutil._clock is timeutil._system_clock


@given(st.integers(min_value=0, max_value=10**9))
def test_compact_round_trip(seconds):
    assert parse_interval(format_interval(seconds)) == timedelta(seconds=seconds)


@given(st.integers(min_value=0, max_value=10**9))
def test_single_unit_round_trip(seconds):
    text = format_single_unit(seconds)
    assert parse_interval(text) == timedelta(seconds=seconds)
    assert text[-1] in "smhd" and text[:-1].isdigit()


_WHOLE_SECONDS = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1)).map(
    lambda d: d.replace(microsecond=0)
)


@given(_WHOLE_SECONDS)
def test_timestamp_round_trip(moment):
    assert parse_timestamp(format_timestamp(moment)) == moment.replace(tzinfo=UTC)

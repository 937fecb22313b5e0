"""Lifespan arithmetic (docs/behaviour.md#handle-creation, #propagation, #claim-status, #lifespans)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from poolboy.domain.claim_lifespan import clamp_explanation, end_for_request, lifespan_request
from poolboy.domain.lifespan import (
    LifespanError,
    Limits,
    bind_end,
    clamp_end,
    combine_limits,
    first_ready_end,
    lifespan_start,
    maximum_end,
    new_handle_end,
    parse_interval,
    pool_handle_lifespan,
    status_interval,
    unclaimed_end,
)

NOW = datetime(2024, 1, 10, 12, 0, 0, tzinfo=UTC)
H = timedelta(hours=1)
D = timedelta(days=1)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# ----------------------------------------------------------------------------------------------- Limits


def test_limits_parse():
    limits = Limits.parse("1d", "7d", "3d")
    assert (limits.default, limits.maximum, limits.relative_maximum) == (D, 7 * D, 3 * D)
    assert (limits.default_raw, limits.maximum_raw, limits.relative_maximum_raw) == ("1d", "7d", "3d")
    assert not limits.is_empty


def test_limits_keep_raw_templates():
    raw = {"maximum": "{{ '14d' if big else '7d' }}"}
    limits = Limits.from_spec({"default": "1d", "maximum": "7d"}, raw=raw)
    assert limits.maximum == 7 * D
    assert limits.maximum_raw == raw["maximum"]
    assert limits.default_raw == "1d"


@pytest.mark.parametrize("spec", [None, {}, {"default": None}, {"default": ""}, {"unclaimed": "1h"}])
def test_limits_empty(spec):
    limits = Limits.from_spec(spec)
    assert limits.is_empty
    assert limits == Limits()


@pytest.mark.parametrize(
    ("field", "value"),
    [("default", "forever"), ("maximum", "1x"), ("relativeMaximum", "{{ x }}"), ("default", "1d 2q")],
)
def test_limits_unparsable_is_lifespan_error(field, value):
    with pytest.raises(LifespanError, match=f"Unable to parse lifespan {field}"):
        Limits.from_spec({field: value})
    assert issubclass(LifespanError, ValueError)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("30m", 30 * timedelta(minutes=1)),
        ("1d12h", 36 * H),
        (90, timedelta(seconds=90)),
        (None, None),
        ("", None),
        ("  ", None),
        (H, H),
    ],
)
def test_parse_interval(value, expected):
    assert parse_interval(value) == expected


COMBINE_CASES = [
    ([], Limits()),
    ([Limits.parse("1d", "7d", "3d")], Limits.parse("1d", "7d", "3d")),
    ([Limits.parse("1d", "7d", "3d"), Limits.parse("2h", "10d", "1d")], Limits.parse("2h", "7d", "1d")),
    ([Limits.parse("1d"), Limits.parse(None, "7d")], Limits.parse("1d", "7d")),
    ([Limits(), Limits.parse(None, None, "4h")], Limits.parse(None, None, "4h")),
    ([Limits.parse("1d12h"), Limits.parse("36h")], Limits.parse("1d12h")),  # equal: the first wins
    ([Limits.parse("2d"), Limits.parse("1d12h")], Limits.parse("1d12h")),
]


@pytest.mark.parametrize(("limits", "expected"), COMBINE_CASES)
def test_combine_limits_takes_minimum_of_each_field(limits, expected):
    assert combine_limits(limits) == expected


# ----------------------------------------------------------------------------------------------- maximum end

MAX_END_CASES = [
    (NOW, None, Limits(), None),
    (NOW, None, Limits.parse(None, "7d"), NOW + 7 * D),
    (NOW - D, None, Limits.parse(None, "7d"), NOW + 6 * D),
    (NOW - D, NOW, Limits.parse(None, "7d"), NOW + 7 * D),  # measured from firstReady once set
    (NOW, None, Limits.parse(None, None, "3d"), NOW + 3 * D),
    (NOW - 5 * D, None, Limits.parse(None, "7d", "3d"), NOW + 2 * D),  # start + maximum earlier
    (NOW, None, Limits.parse(None, "7d", "3d"), NOW + 3 * D),  # now + relativeMaximum earlier
    (None, None, Limits.parse(None, "7d", "3d"), NOW + 3 * D),
    (None, None, Limits.parse(None, "7d"), None),
    (NOW, None, Limits.parse("1d"), None),  # a default is not a limit
]


@pytest.mark.parametrize(("start", "first_ready", "limits", "expected"), MAX_END_CASES)
def test_maximum_end(start, first_ready, limits, expected):
    assert maximum_end(start, first_ready, limits, NOW) == expected


@pytest.mark.parametrize(
    ("requested", "max_end", "expected"),
    [
        (NOW, None, NOW),
        (NOW + D, NOW + H, NOW + H),
        (NOW + H, NOW + D, NOW + H),
        (NOW, NOW, NOW),
        (NOW - D, NOW, NOW - D),
    ],
)
def test_clamp_end(requested, max_end, expected):
    assert clamp_end(requested, max_end) == expected


# ----------------------------------------------------------------------------------------------- handle creation

NEW_END_CASES = [
    ("nothing", None, Limits(), None),
    ("default", None, Limits.parse("1d"), NOW + D),
    ("default beats relativeMaximum", None, Limits.parse("1d", None, "3d"), NOW + D),
    ("relativeMaximum when no default", None, Limits.parse(None, "7d", "3d"), NOW + 3 * D),
    ("maximum when nothing else", None, Limits.parse(None, "7d"), NOW + 7 * D),
    ("requested within limits", NOW + 2 * D, Limits.parse("1d", "7d"), NOW + 2 * D),
    ("requested clamped to maximum (correct behaviour)", NOW + 30 * D, Limits.parse("1d", "7d"), NOW + 7 * D),
    ("requested clamped to relativeMaximum", NOW + 30 * D, Limits.parse("1d", None, "3d"), NOW + 3 * D),
    ("requested without limits", NOW + 30 * D, Limits(), NOW + 30 * D),
    ("requested in the past stays", NOW - H, Limits.parse("1d", "7d"), NOW - H),
    ("default larger than maximum clamped", None, Limits.parse("10d", "7d"), NOW + 7 * D),
]


@pytest.mark.parametrize(("label", "requested", "limits", "expected"), NEW_END_CASES, ids=[c[0] for c in NEW_END_CASES])
def test_new_handle_end(label, requested, limits, expected):
    assert new_handle_end(requested, limits, NOW, NOW) == expected


def test_new_handle_end_measures_maximum_from_start():
    start = NOW - 5 * D
    assert new_handle_end(NOW + 30 * D, Limits.parse("1d", "7d"), NOW, start) == NOW + 2 * D
    assert new_handle_end(None, Limits.parse("1d", "7d"), NOW) == NOW + D  # start defaults to now


def test_end_minus_start_equals_default_exactly():
    end = new_handle_end(None, Limits.parse("4h"), NOW, NOW)
    assert end - NOW == 4 * H


# ----------------------------------------------------------------------------------------------- pool handles


@pytest.mark.parametrize(
    ("unclaimed", "expected"), [("1h", NOW + H), ("7d", NOW + 7 * D), ("1d12h", NOW + 36 * H), (H, NOW + H)]
)
def test_unclaimed_end(unclaimed, expected):
    assert unclaimed_end(unclaimed, NOW) == expected


@pytest.mark.parametrize("bad", ["", "never", None])
def test_unclaimed_end_errors(bad):
    with pytest.raises(LifespanError):
        unclaimed_end(bad, NOW)


@pytest.mark.parametrize(
    ("default", "current", "expected"),
    [
        ("1d", NOW + H, NOW + D),
        (D, None, NOW + D),
        (None, NOW + H, NOW + H),
        ("", NOW + H, NOW + H),
        (None, None, None),
    ],
)
def test_bind_end(default, current, expected):
    assert bind_end(default, current, NOW) == expected


POOL_CASES = [
    (None, None, {}),
    (
        {"default": "1d", "maximum": "7d", "relativeMaximum": "3d", "unclaimed": "2h"},
        None,
        {"default": "1d", "maximum": "7d", "relativeMaximum": "3d", "end": "2024-01-10T14:00:00Z"},
    ),
    ({"relativeMaximum": "3d"}, None, {"relativeMaximum": "3d"}),  # its own field (correct behaviour)
    ({"maximum": "{{ '7d' }}"}, None, {"maximum": "{{ '7d' }}"}),  # raw strings, templates kept
    ({"default": "1d", "unclaimed": "2h"}, {"maximum": "5d"}, {"maximum": "5d"}),  # the pool replaces the block
    ({"default": "1d"}, {"default": "2h", "unclaimed": "30m"}, {"default": "2h", "end": "2024-01-10T12:30:00Z"}),
    ({"default": "1d"}, {}, {}),
]


@pytest.mark.parametrize(("provider", "pool", "expected"), POOL_CASES)
def test_pool_handle_lifespan(provider, pool, expected):
    assert pool_handle_lifespan(provider, pool, NOW) == expected


def test_pool_handle_end_minus_creation_equals_unclaimed():
    end = at(pool_handle_lifespan({"unclaimed": "45m"}, None, NOW)["end"])
    assert end - NOW == timedelta(minutes=45)


# ----------------------------------------------------------------------------------------------- first ready

START = NOW - 2 * H

FIRST_READY_CASES = [
    ("no default", None, START, None, None, None),
    ("no requested end", None, START, "1d", None, NOW + D),
    ("end equals start + default", START + D, START, "1d", None, NOW + D),
    ("end as string equals start + default", "2024-01-11T10:00:00Z", START, "1d", None, NOW + D),
    ("user-chosen end kept", START + 2 * D, START, "1d", None, None),
    ("clamped to maximum", None, START, "1d", NOW + H, NOW + H),
    ("timedelta default", None, START, D, None, NOW + D),
    ("no start, requested end kept", NOW + D, None, "1d", None, None),
]


@pytest.mark.parametrize(
    ("label", "spec_end", "start", "default", "max_end", "expected"),
    FIRST_READY_CASES,
    ids=[c[0] for c in FIRST_READY_CASES],
)
def test_first_ready_end(label, spec_end, start, default, max_end, expected):
    assert first_ready_end(spec_end, start, default, NOW, max_end) == expected


def test_first_ready_end_minus_first_ready_equals_default():
    assert first_ready_end(None, START, "3h", NOW) - NOW == 3 * H


def test_first_ready_end_unparsable():
    with pytest.raises(LifespanError):
        first_ready_end("tomorrow", START, "1d", NOW)
    with pytest.raises(LifespanError):
        first_ready_end(None, START, "a while", NOW)


# ----------------------------------------------------------------------------------------------- start


START_CASES = [
    (
        {
            "metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"lifespan": {"start": "2024-01-02T00:00:00Z"}},
            "status": {"lifespan": {"start": "2024-01-03T00:00:00Z"}},
        },
        at("2024-01-03T00:00:00Z"),
    ),
    (
        {
            "metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"lifespan": {"start": "2024-01-02T00:00:00Z"}},
        },
        at("2024-01-02T00:00:00Z"),
    ),
    ({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": {}}, at("2024-01-01T00:00:00Z")),
    (
        {"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}, "status": {"lifespan": {}}},
        at("2024-01-01T00:00:00Z"),
    ),
    (
        {"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}, "status": None, "spec": None},
        at("2024-01-01T00:00:00Z"),
    ),
    ({}, None),
]


@pytest.mark.parametrize(("claim", "expected"), START_CASES)
def test_lifespan_start(claim, expected):
    assert lifespan_start(claim) == expected


def test_lifespan_start_unparsable():
    with pytest.raises(LifespanError, match=r"spec\.lifespan\.start"):
        lifespan_start({"spec": {"lifespan": {"start": "next week"}}})


# ----------------------------------------------------------------------------------------------- status intervals


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (36 * H, "36h"),
        ("1d12h", "36h"),
        ("1d", "1d"),
        ("90m", "90m"),
        ("1h30m", "90m"),
        ("45s", "45s"),
        ("7d", "7d"),
        (timedelta(0), "0s"),
        ("1d2h30m", "1590m"),
        ("1h 1s", "3601s"),
    ],
)
def test_status_interval_is_single_unit(value, expected):
    text = status_interval(value)
    assert text == expected
    assert text[:-1].isdigit() and text[-1] in "smhd"


@pytest.mark.parametrize("bad", ["", "soon", -H])
def test_status_interval_errors(bad):
    with pytest.raises(LifespanError):
        status_interval(bad)


# --- a requested end clamped once (docs/behaviour.md#propagation)
# -----------------------------------------------------------------


def test_lifespan_request_records_the_request_and_the_evaluated_limits() -> None:
    limits = Limits.parse("30m", "1d12h", "1h")
    assert lifespan_request(NOW, limits) == "end=2024-01-10T12:00:00Z,maximum=1d12h,relativeMaximum=1h"
    assert lifespan_request(NOW, Limits.parse("30m")) == "end=2024-01-10T12:00:00Z"


@pytest.mark.parametrize(
    ("requested", "max_end", "current", "same_request", "expected"),
    [
        # within the limits: applied exactly, whatever was recorded
        (NOW + H, NOW + D, NOW + 2 * H, True, NOW + H),
        (NOW + H, None, None, False, NOW + H),
        # beyond the limits, first time (or new inputs): clamped to the maximum end of this reconcile
        (NOW + 5 * D, NOW + H, None, False, NOW + H),
        (NOW + 5 * D, NOW + H, NOW + H - timedelta(seconds=30), False, NOW + H),
        # beyond the limits, same inputs, the earlier clamp still allowed: kept although now + relativeMaximum moved
        (NOW + 5 * D, NOW + H, NOW + H - timedelta(seconds=30), True, NOW + H - timedelta(seconds=30)),
        # same inputs, but the limits no longer allow the earlier end (e.g. a template lowered them): clamped again
        (NOW + 5 * D, NOW + H, NOW + 2 * H, True, NOW + H),
    ],
)
def test_end_for_request_clamps_once(requested, max_end, current, same_request, expected) -> None:
    assert end_for_request(requested, max_end, current, same_request) == expected


def test_clamp_explanation_names_request_limits_and_end() -> None:
    limits = Limits(maximum=7 * D, relative_maximum=3 * D)
    message = clamp_explanation(NOW + 30 * D, NOW + 3 * D, limits)
    assert message == ("Requested lifespan end 2024-02-09T12:00:00Z is beyond the maximum lifespan (maximum 7d, "
                       "relativeMaximum 3d); the lifespan end is 2024-01-13T12:00:00Z.")


@pytest.mark.parametrize(("requested", "end"), [(None, NOW), (NOW, None), (NOW, NOW), (NOW, NOW + H)])
def test_clamp_explanation_is_none_when_the_request_was_applied(requested: datetime | None,
                                                                  end: datetime | None) -> None:
    assert clamp_explanation(requested, end, Limits(maximum=D)) is None

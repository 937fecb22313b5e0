"""Every datetime a template can produce, paired with every other (docs/behaviour.md#template-filters-and-globals, issue
9 item 2).

Upstream evaluates templates with plain Python semantics: two timezone-aware values (``now(true)``, ``to_datetime``
with ``%z``, ``timestamp.datetime``, ``datetime(..., tzinfo=timezone.utc)``) subtract and compare, as do two naive
ones (``now()``, ``to_datetime`` without ``%z``, ``datetime(...)``); mixing the two raises for ``-`` and ordering
and is merely unequal for ``==``. Each pair is checked against the value Python itself computes from the same
inputs, so the matrix states the semantics instead of restating our implementation.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

import pytest

from poolboy.utils import timeutil
from poolboy.utils.templating import TemplateError, render_string, wrap_object

NOW = datetime(2024, 1, 1, 22, 0, 0, tzinfo=UTC)
LOCAL_NOW = NOW.astimezone().replace(tzinfo=None)
PLUS_2 = timezone(timedelta(hours=2))

CLAIM = {"metadata": {"name": "c", "namespace": "n"},
         "status": {"lifespan": {"start": "2024-01-01T21:00:00Z", "end": "2024-01-02T00:00:00Z",
                                 "maximum": "2d", "relativeMaximum": "1d"}}}
HANDLE = {"metadata": {"name": "guid-abcde", "namespace": "poolboy"},
          "spec": {"lifespan": {"end": "2024-01-01T23:30:00Z", "default": "30m"}}}

#: template expression → the value Python gives for it at NOW (aware values first, then naive ones)
AWARE = {
    "now(true)": NOW,
    "now(utc=True)": NOW,
    "timestamp.datetime": NOW,
    "timestamp('2024-01-01T20:00:00Z').datetime": datetime(2024, 1, 1, 20, tzinfo=UTC),
    "'2024-01-01T23:00:00Z' | to_datetime('%Y-%m-%dT%H:%M:%S%z')": datetime(2024, 1, 1, 23, tzinfo=UTC),
    "'2024-01-01T23:00:00+0200' | to_datetime('%Y-%m-%dT%H:%M:%S%z')": datetime(2024, 1, 1, 23, tzinfo=PLUS_2),
    "datetime(2024, 1, 1, 12, tzinfo=timezone.utc)": datetime(2024, 1, 1, 12, tzinfo=UTC),
    "resource_claim.status.lifespan.end | to_datetime('%Y-%m-%dT%H:%M:%S%z')": datetime(2024, 1, 2, tzinfo=UTC),
    "resource_handle.spec.lifespan.end | to_datetime('%Y-%m-%dT%H:%M:%S%z')": datetime(2024, 1, 1, 23, 30,
                                                                                     tzinfo=UTC),
}
NAIVE = {
    "now()": LOCAL_NOW,
    "'2024-01-01 23:00:00' | to_datetime": datetime(2024, 1, 1, 23),
    "'2024-01-01T23:00:00Z' | to_datetime('%Y-%m-%dT%H:%M:%SZ')": datetime(2024, 1, 1, 23),
    "datetime(2024, 1, 1, 12)": datetime(2024, 1, 1, 12),
    "resource_claim.status.lifespan.start | to_datetime('%Y-%m-%dT%H:%M:%SZ')": datetime(2024, 1, 1, 21),
    "resource_handle.spec.lifespan.end | to_datetime('%Y-%m-%dT%H:%M:%SZ')": datetime(2024, 1, 1, 23, 30),
}
SAME_KIND = list(itertools.product(AWARE, repeat=2)) + list(itertools.product(NAIVE, repeat=2))
MIXED = [(a, n) for a in AWARE for n in NAIVE] + [(n, a) for a in AWARE for n in NAIVE]


def render(source: str) -> str:
    with timeutil.freeze(NOW):
        return render_string(source, {"resource_claim": wrap_object(CLAIM), "resource_handle": wrap_object(HANDLE)})


@pytest.mark.parametrize("expression", list(AWARE))
def test_aware_values_carry_an_offset(expression: str) -> None:
    assert render("{{ (" + expression + ").utcoffset() }}") == str(AWARE[expression].utcoffset())


@pytest.mark.parametrize("expression", list(NAIVE))
def test_naive_values_have_no_offset(expression: str) -> None:
    assert render("{{ (" + expression + ").tzinfo is none }}") == "True"


@pytest.mark.parametrize(("left", "right"), SAME_KIND)
def test_same_kind_pairs_subtract_and_compare_as_python_does(left: str, right: str) -> None:
    a, b = {**AWARE, **NAIVE}[left], {**AWARE, **NAIVE}[right]
    assert render("{{ ((" + left + ") - (" + right + ")).total_seconds() }}") == str((a - b).total_seconds())
    for operator in ("<", "<=", ">", ">=", "==", "!="):
        expected = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[operator]
        assert render("{{ (" + left + ") " + operator + " (" + right + ") }}") == str(expected), operator


@pytest.mark.parametrize(("left", "right"), MIXED)
def test_mixed_pairs_fail_like_python_but_are_merely_unequal(left: str, right: str) -> None:
    for operator in ("-", "<", ">="):
        with pytest.raises(TemplateError, match="offset-naive and offset-aware"):
            render("{{ (" + left + ") " + operator + " (" + right + ") }}")
    assert render("{{ (" + left + ") == (" + right + ") }}") == "False"
    assert render("{{ (" + left + ") != (" + right + ") }}") == "True"


@pytest.mark.parametrize("expression", list(AWARE) + list(NAIVE))
def test_every_datetime_shifts_by_an_interval(expression: str) -> None:
    value = {**AWARE, **NAIVE}[expression]
    shifted = value + timedelta(days=2)
    for interval in ("timedelta(days=2)", "'2d' | parse_time_interval",
                     "resource_claim.status.lifespan.maximum | parse_time_interval"):
        assert render("{{ (" + expression + ") + (" + interval + ") }}") == str(shifted), interval
        assert render("{{ (" + expression + ") - (" + interval + ") }}") == str(value - timedelta(days=2))


def test_upstream_maximum_interval_check() -> None:
    """upstream's test-vars-03 check: an aware ``to_datetime`` minus ``now(true)`` against a parsed var."""
    check = "{{ (spec.end | to_datetime('%Y-%m-%dT%H:%M:%S%z') - now(true) < maximum_interval | parse_time_interval)" \
            " | bool }}"
    with timeutil.freeze(NOW):
        inside = render_string(check, {"spec": {"end": "2024-01-01T22:01:00Z"}}, {"maximum_interval": "1h"})
        beyond = render_string(check, {"spec": {"end": "2024-01-01T23:20:00Z"}}, {"maximum_interval": "1h"})
    assert (inside, beyond) == (True, False)


def test_python_datetime_now_pairs_with_the_matching_now() -> None:
    """``datetime.now()`` is naive and ``datetime.now(timezone.utc)`` aware, as ``now()`` and ``now(true)`` are."""
    assert render_string("{{ (datetime.now() - now()).total_seconds() | abs < 86400 * 2 }}") == "True"
    assert render_string("{{ (datetime.now(timezone.utc) - now(true)).total_seconds() | abs < 5 }}") == "True"
    with pytest.raises(TemplateError, match="offset-naive and offset-aware"):
        render_string("{{ datetime.now() - now(true) }}")


@pytest.mark.parametrize("other", ["timestamp", "'2024-01-01T22:00:00Z'", "now(true)",
                                   "'2024-01-01T22:00:00Z' | to_datetime('%Y-%m-%dT%H:%M:%S%z')"])
def test_timestamp_compares_with_timestamps_strings_and_aware_datetimes(other: str) -> None:
    assert render("{{ timestamp == " + other + " }}") == "True"
    assert render("{{ timestamp.add('1h') > " + other + " }}") == "True"
    assert render("{{ timestamp.add('-1h') <= " + other + " }}") == "True"
    assert render("{{ " + other + " < timestamp.add('1s') }}") == "True"


def test_now_with_a_format_is_a_string_in_utc_or_local_time() -> None:
    assert render("{{ now(true, '%Y-%m-%dT%H:%M:%S%z') }}") == "2024-01-01T22:00:00+0000"
    assert render("{{ now(false, '%H:%M') }}") == LOCAL_NOW.strftime("%H:%M")

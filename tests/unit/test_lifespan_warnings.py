"""Warnings before a claim's lifespan end, pure: due times, once per lead time, again after a new end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from poolboy.domain import lifespan_warnings as lw
from poolboy.settings import Settings

END = datetime(2030, 1, 2, 12, 0, tzinfo=UTC)
LEADS = lw.parse_leads("10m,24h,1h")


def test_parse_leads_longest_first_and_off() -> None:
    assert (timedelta(days=1), timedelta(hours=1), timedelta(minutes=10)) == LEADS
    assert lw.parse_leads("off") == ()
    with pytest.raises(ValueError):
        lw.parse_leads("1h,soon")
    with pytest.raises(ValueError, match="POOLBOY_LIFESPAN_WARNINGS"):
        Settings(lifespan_warnings="soon")


def test_nothing_before_the_first_lead_time_but_the_next_deadline() -> None:
    decision = lw.decide(END, END - timedelta(days=2), LEADS, None)
    assert decision == lw.Decision(None, None, END - timedelta(days=1), False)


def test_each_lead_time_warns_once() -> None:
    first = lw.decide(END, END - timedelta(hours=23), LEADS, None)
    assert first.announce == timedelta(days=1) and first.ending
    assert first.record == {"end": "2030-01-02T12:00:00Z", "sent": ["1d"]}
    assert first.next_at == END - timedelta(hours=1)
    again = lw.decide(END, END - timedelta(hours=22), LEADS, first.record)
    assert again.announce is None and again.record == first.record
    second = lw.decide(END, END - timedelta(minutes=59), LEADS, first.record)
    assert second.announce == timedelta(hours=1) and second.record["sent"] == ["1d", "1h"]


def test_several_due_at_once_announce_only_the_closest() -> None:
    decision = lw.decide(END, END - timedelta(minutes=5), LEADS, None)
    assert decision.announce == timedelta(minutes=10)
    assert decision.record["sent"] == ["1d", "1h", "10m"] and decision.next_at is None


def test_a_new_end_warns_again() -> None:
    sent = lw.decide(END, END - timedelta(minutes=30), LEADS, None).record
    later = END + timedelta(minutes=20)
    decision = lw.decide(later, END - timedelta(minutes=29), LEADS, sent)
    assert decision.announce == timedelta(hours=1)
    assert decision.record == {"end": "2030-01-02T12:20:00Z", "sent": ["1d", "1h"]}
    far = lw.decide(END + timedelta(days=3), END - timedelta(minutes=29), LEADS, sent)
    assert far.record is None and not far.ending and far.announce is None


def test_no_end_or_no_leads_decide_nothing() -> None:
    assert lw.decide(None, END, LEADS, {"end": "x", "sent": ["1d"]}) == lw.Decision(None, None, None, False)
    assert lw.decide(END, END - timedelta(minutes=1), (), None) == lw.Decision(None, None, None, False)
    assert lw.condition(END, True)[:2] == (True, "LifespanEnding")
    assert lw.condition(END, False)[:2] == (False, "NotEnding")


def test_a_lead_time_as_long_as_the_lifespan_does_not_apply_until_an_extension_makes_it() -> None:
    start = END - timedelta(hours=2)
    decision = lw.decide(END, start, LEADS, None, start)
    assert decision.announce is None and decision.next_at == END - timedelta(hours=1)
    extended = END + timedelta(days=1)
    assert lw.decide(extended, END, LEADS, None, start).announce == timedelta(days=1)

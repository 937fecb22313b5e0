"""Warnings before a claim's lifespan ends: when they are due, what they say, what status records.

The lead times come from ``POOLBOY_LIFESPAN_WARNINGS`` (default ``24h,1h,10m``). A claim's status keeps, next to
its end, which lead times were already warned for *that* end (``status.lifespan.warnings``): each lead time warns
once, and an end that moves (an extension, a new request) starts afresh, so the user is warned again before the new
end. A lead time at least as long as the whole lifespan does not apply. When several lead times are due at once
(a claim bound 5 minutes before its end, a worker that was down) only the closest one is announced; the others are
recorded as passed, never sent late one after another. The next lead time is the claim's next deadline in the
delaying queue, so no sweep looks for them.

Messages name absolute times only, so a reconcile that changes nothing writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from poolboy.utils import timeutil

DEFAULT = "24h,1h,10m"
REASON = "LifespanEnding"
CONDITION = "LifespanEnding"
_OFF = ("", "none", "off", "false", "0")


def parse_leads(text: str) -> tuple[timedelta, ...]:
    """Lead times, longest first, from ``"24h,1h,10m"``; none for ``off``/``none``; ValueError on a bad interval."""
    if text.strip().lower() in _OFF:
        return ()
    leads = {timeutil.parse_interval(part.strip()) for part in text.split(",") if part.strip()}
    if any(lead.total_seconds() <= 0 for lead in leads):
        raise ValueError(f"lifespan warning lead times must be positive: {text!r}")
    return tuple(sorted(leads, reverse=True))


@dataclass(frozen=True)
class Decision:
    """This run's outcome: the ``status.lifespan.warnings`` record, a warning to send, the next lead's time, and
    whether the end is within the longest lead time (the ``LifespanEnding`` condition)."""

    record: dict[str, Any] | None
    announce: timedelta | None
    next_at: datetime | None
    ending: bool


def decide(end: datetime | None, now: datetime, leads: tuple[timedelta, ...],
           record: Mapping[str, Any] | None, start: datetime | None = None) -> Decision:
    """What is due for a claim whose lifespan runs from ``start`` (its first ready, else its bind) to ``end``.

    A lead time at least as long as the whole lifespan is skipped: a claim made for two hours is not warned
    "24 hours before its end" the moment it is bound. An extension lengthens the lifespan, so it may bring one in.
    """
    if end is not None and start is not None:
        leads = tuple(lead for lead in leads if end - start > lead)
    if end is None or not leads:
        return Decision(None, None, None, False)
    formatted_end = timeutil.format_timestamp(end)
    sent = list((record or {}).get("sent") or []) if (record or {}).get("end") == formatted_end else []
    due = [lead for lead in leads if now >= end - lead and timeutil.format_interval(lead) not in sent]
    announce = min(due) if due and now < end else None
    sent += [timeutil.format_interval(lead) for lead in due]
    upcoming = [end - lead for lead in leads if end - lead > now]
    new_record = {"end": formatted_end, "sent": sent} if sent else None
    return Decision(new_record, announce, min(upcoming) if upcoming else None, now >= end - leads[0])


def message(end: datetime, lead: timedelta) -> str:
    return (f"The lifespan of this claim ends at {timeutil.format_timestamp(end)} "
            f"(warning {timeutil.format_interval(lead)} before the end); its resources will then be deleted "
            "unless the lifespan is extended.")


def condition(end: datetime | None, ending: bool) -> tuple[bool, str, str]:
    """``(status, reason, message)`` of the ``LifespanEnding`` condition."""
    if ending and end is not None:
        return True, REASON, f"The lifespan ends at {timeutil.format_timestamp(end)}."
    if end is None:
        return False, "NoLifespanEnd", "The lifespan has no end."
    return False, "NotEnding", f"The lifespan ends at {timeutil.format_timestamp(end)}, beyond the first warning."

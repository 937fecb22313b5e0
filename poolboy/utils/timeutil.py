"""Intervals and timestamps in the forms Poolboy reads and writes (docs/behaviour.md#conventions).

Why one module: every lifespan, template global and status field agrees on the same parsing rules, the same
``%Y-%m-%dT%H:%M:%SZ`` format and the same whole-second ``now``. ``utcnow()`` goes through a replaceable clock so
tests can freeze time for templates (``now()``, ``timestamp``) without patching ``datetime``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from pytimeparse2 import parse as _pytimeparse

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_UNITS: tuple[tuple[str, int], ...] = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def _system_clock() -> datetime:
    return datetime.now(UTC)


_clock: Callable[[], datetime] = _system_clock


def parse_interval(value: str | int | float | timedelta) -> timedelta:
    """Parse a pytimeparse-compatible interval ("30m", "1d12h", "1h 30m", "90" = seconds).

    Numbers are seconds. Raises ``ValueError`` naming the bad value, so callers can put it into a status message.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(f"invalid interval {value!r}: expected a string such as '30m' or a number of seconds")
    if isinstance(value, int | float):
        return timedelta(seconds=value)
    if not isinstance(value, str):
        raise ValueError(f"invalid interval {value!r}: expected a string such as '30m' or a number of seconds")
    text = value.strip()
    seconds = _pytimeparse(text) if text else None
    if seconds is None:
        raise ValueError(f"invalid interval {value!r}: expected a value such as '30m', '1d12h' or '90' (seconds)")
    if isinstance(seconds, timedelta):  # pytimeparse2 may be configured to return timedeltas
        return seconds
    return timedelta(seconds=seconds)


def _total_seconds(value: timedelta | int | float) -> int:
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    return round(seconds)


def format_interval(value: timedelta | int | float) -> str:
    """Compact form used where Poolboy writes an interval freely: "1d2h30m", "30m", "0s" (whole seconds)."""
    seconds = _total_seconds(value)
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in _UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return sign + "".join(parts)


def format_single_unit(value: timedelta | int | float) -> str:
    """The largest single unit that divides the interval exactly ("36h", "90m", "1d", "45s").

    Needed for status fields whose schema pattern is ``^[0-9]+[smhd]$`` (docs/behaviour.md#lifespans). Negative values
    cannot match that pattern, so they raise ``ValueError``.
    """
    seconds = _total_seconds(value)
    if seconds < 0:
        raise ValueError(f"negative interval {value!r} cannot be written as a single unit")
    if seconds == 0:
        return "0s"
    for unit, size in _UNITS:
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    raise AssertionError("unreachable: seconds always divide")  # pragma: no cover


_ISO_Z = re.compile(r"[zZ]$")


def parse_timestamp(value: str | datetime) -> datetime:
    """Parse ``%Y-%m-%dT%H:%M:%SZ`` (and fractional/offset ISO 8601 forms) into an aware UTC datetime.

    A naive value is taken to be UTC. Raises ``ValueError`` with the bad value in the message.
    """
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if not isinstance(value, str):
        raise ValueError(f"invalid timestamp {value!r}: expected a string such as '2024-01-01T00:00:00Z'")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(_ISO_Z.sub("+00:00", text))
    except ValueError:
        raise ValueError(f"invalid timestamp {value!r}: expected a value such as '2024-01-01T00:00:00Z'") from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    """``%Y-%m-%dT%H:%M:%SZ`` in UTC; a naive datetime is taken to be UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime(TIMESTAMP_FORMAT)


def utcnow() -> datetime:
    """Now in UTC, truncated to whole seconds, read from the (freezable) clock."""
    current = _clock()
    current = current.replace(tzinfo=UTC) if current.tzinfo is None else current.astimezone(UTC)
    return current.replace(microsecond=0)


def set_clock(clock: Callable[[], datetime] | None) -> Callable[[], datetime]:
    """Replace the clock (``None`` restores the system clock); returns the previous one so callers can restore it."""
    global _clock
    previous = _clock
    _clock = clock or _system_clock
    return previous


@contextmanager
def freeze(moment: datetime | str) -> Iterator[datetime]:
    """Make ``utcnow()`` return ``moment`` inside the block (tests; deterministic template output)."""
    frozen = parse_timestamp(moment)
    previous = set_clock(lambda: frozen)
    try:
        yield frozen.replace(microsecond=0)
    finally:
        set_clock(previous)

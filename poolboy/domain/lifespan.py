"""Lifespan arithmetic (docs/behaviour.md#binding, #handle-creation, #propagation, #claim-status, #lifespans), as pure
functions of an explicit ``now``.

Why pure and explicit: every value computed in one reconcile must use the same ``now`` so that exact differences
hold (``end - start == default``, ``end - firstReady == default``). The reconciler renders the lifespan templates
first; these functions only see rendered interval strings (or ``timedelta`` values) and raise
:class:`LifespanError` — a permanent, user-fixable error — for values they cannot parse.

Every end computed for a handle is clamped to the maximum end (*correct behaviour*: upstream did not clamp a
requested end at creation), and ``relativeMaximum`` is always taken from ``relativeMaximum``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from poolboy.utils import timeutil

__all__ = [
    "LifespanError",
    "Limits",
    "bind_end",
    "clamp_end",
    "combine_limits",
    "first_ready_end",
    "lifespan_start",
    "maximum_end",
    "new_handle_end",
    "parse_interval",
    "pool_handle_lifespan",
    "status_interval",
    "to_datetime",
    "unclaimed_end",
]


class LifespanError(ValueError):
    """A lifespan value (interval or timestamp) could not be parsed; the message names the field and value."""


def parse_interval(value: str | int | float | timedelta | None, field: str = "lifespan") -> timedelta | None:
    """Parse an (already rendered) interval; ``None`` and ``""`` mean "not set"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return timeutil.parse_interval(value)
    except ValueError as error:
        raise LifespanError(f"Unable to parse {field} {value!r}: {error}") from None


def to_datetime(value: str | datetime | None, field: str = "timestamp") -> datetime | None:
    """Parse a timestamp to aware UTC; ``None``/``""`` stay ``None``."""
    if value is None or value == "":
        return None
    try:
        return timeutil.parse_timestamp(value)
    except ValueError as error:
        raise LifespanError(f"Unable to parse {field} {value!r}: {error}") from None


@dataclass(frozen=True)
class Limits:
    """Evaluated lifespan limits of a provider (or the combination of several), plus their raw strings.

    The raw strings are what the handle's ``spec.lifespan.maximum``/``relativeMaximum`` keep (they may be templates
    on the provider; here they are the strings the minimum came from).
    """

    default: timedelta | None = None
    maximum: timedelta | None = None
    relative_maximum: timedelta | None = None
    default_raw: str | None = None
    maximum_raw: str | None = None
    relative_maximum_raw: str | None = None

    @classmethod
    def parse(
        cls,
        default: Any = None,
        maximum: Any = None,
        relative_maximum: Any = None,
        *,
        raw: Mapping[str, Any] | None = None,
    ) -> Limits:
        """Limits from rendered values. ``raw`` may carry the unrendered strings (keys ``default``, ``maximum``,
        ``relativeMaximum``); without it the rendered values are the raw strings."""
        raw = raw or {}

        def _raw(key: str, value: Any) -> str | None:
            chosen = raw.get(key, value)
            return None if chosen is None or chosen == "" else str(chosen)

        return cls(
            default=parse_interval(default, "lifespan default"),
            maximum=parse_interval(maximum, "lifespan maximum"),
            relative_maximum=parse_interval(relative_maximum, "lifespan relativeMaximum"),
            default_raw=_raw("default", default),
            maximum_raw=_raw("maximum", maximum),
            relative_maximum_raw=_raw("relativeMaximum", relative_maximum),
        )

    @classmethod
    def from_spec(cls, lifespan: Mapping[str, Any] | None, *, raw: Mapping[str, Any] | None = None) -> Limits:
        """Limits from a rendered ``{default, maximum, relativeMaximum}`` mapping (provider, pool or handle)."""
        lifespan = lifespan or {}
        return cls.parse(lifespan.get("default"), lifespan.get("maximum"), lifespan.get("relativeMaximum"), raw=raw)

    @property
    def is_empty(self) -> bool:
        return self.default is None and self.maximum is None and self.relative_maximum is None


def _min_field(limits: list[Limits], name: str) -> tuple[timedelta | None, str | None]:
    best: tuple[timedelta | None, str | None] = (None, None)
    for item in limits:
        value = getattr(item, name)
        if value is not None and (best[0] is None or value < best[0]):
            best = (value, getattr(item, name + "_raw"))
    return best


def combine_limits(limits: Iterable[Limits]) -> Limits:
    """The minimum of each field across providers (docs/behaviour.md#handle-creation resources mode); missing fields are
    ignored."""
    items = list(limits)
    default, default_raw = _min_field(items, "default")
    maximum, maximum_raw = _min_field(items, "maximum")
    relative, relative_raw = _min_field(items, "relative_maximum")
    return Limits(default, maximum, relative, default_raw, maximum_raw, relative_raw)


def maximum_end(start: datetime | None, first_ready: datetime | None, limits: Limits, now: datetime) -> datetime | None:
    """Earlier of (first_ready or start) + maximum and now + relativeMaximum; ``None`` when neither limit is set."""
    candidates = []
    origin = first_ready or start
    if limits.maximum is not None and origin is not None:
        candidates.append(origin + limits.maximum)
    if limits.relative_maximum is not None:
        candidates.append(now + limits.relative_maximum)
    return min(candidates) if candidates else None


def clamp_end(requested: datetime, max_end: datetime | None) -> datetime:
    """``requested``, but never later than ``max_end`` (when there is one)."""
    return requested if max_end is None or requested <= max_end else max_end


def new_handle_end(
    requested_end: datetime | None, limits: Limits, now: datetime, start: datetime | None = None
) -> datetime | None:
    """End of a handle created for a claim (docs/behaviour.md#handle-creation): the requested end, else now + default,
    else now + relativeMaximum, else now + maximum — always clamped to the maximum end measured from ``start``
    (default ``now``, the bind/create time)."""
    if requested_end is not None:
        end = requested_end
    elif limits.default is not None:
        end = now + limits.default
    elif limits.relative_maximum is not None:
        end = now + limits.relative_maximum
    elif limits.maximum is not None:
        end = now + limits.maximum
    else:
        return None
    return clamp_end(end, maximum_end(start or now, None, limits, now))


def unclaimed_end(unclaimed: str | timedelta, now: datetime) -> datetime:
    """End of an unbound pool handle: now + unclaimed."""
    interval = parse_interval(unclaimed, "lifespan unclaimed")
    if interval is None:
        raise LifespanError(f"Unable to parse lifespan unclaimed {unclaimed!r}: empty")
    return now + interval


def bind_end(default: str | timedelta | None, current_end: datetime | None, now: datetime) -> datetime | None:
    """End of a pool handle at bind: now + default when there is a default, else the current (unclaimed) end."""
    interval = parse_interval(default, "lifespan default")
    return now + interval if interval is not None else current_end


def first_ready_end(
    spec_end: str | datetime | None,
    start: datetime | None,
    default: str | timedelta | None,
    now: datetime,
    max_end: datetime | None = None,
) -> datetime | None:
    """The claim's new ``spec.lifespan.end`` on first ready (docs/behaviour.md#claim-status), or ``None`` when it must
    not change.

    With a default, the end is reset to now + default when the claim has no requested end, or when its end is
    exactly lifespan start + default (i.e. the user did not choose it). ``max_end`` (measured from firstReady)
    clamps the result.
    """
    interval = parse_interval(default, "lifespan default")
    if interval is None:
        return None
    current = to_datetime(spec_end, "spec.lifespan.end")
    if current is not None and (start is None or current != start + interval):
        return None
    return clamp_end(now + interval, max_end)


def lifespan_start(claim: Mapping[str, Any]) -> datetime | None:
    """Claim lifespan start: ``status.lifespan.start``, else ``spec.lifespan.start``, else ``creationTimestamp``."""
    candidates = (
        ("status.lifespan.start", ((claim.get("status") or {}).get("lifespan") or {}).get("start")),
        ("spec.lifespan.start", ((claim.get("spec") or {}).get("lifespan") or {}).get("start")),
        ("metadata.creationTimestamp", (claim.get("metadata") or {}).get("creationTimestamp")),
    )
    for field, value in candidates:
        if value:
            return to_datetime(value, field)
    return None


def status_interval(value: timedelta | str) -> str:
    """Single-unit form for status fields with pattern ``^[0-9]+[smhd]$`` (``1d12h`` → ``36h``)."""
    interval = parse_interval(value, "lifespan interval") if not isinstance(value, timedelta) else value
    if interval is None:
        raise LifespanError(f"Unable to parse lifespan interval {value!r}: empty")
    try:
        return timeutil.format_single_unit(interval)
    except ValueError as error:
        raise LifespanError(str(error)) from None


def pool_handle_lifespan(
    provider_lifespan: Mapping[str, Any] | None, pool_lifespan: Mapping[str, Any] | None, now: datetime
) -> dict[str, str]:
    """``spec.lifespan`` of a new pool handle (docs/behaviour.md#lifespans).

    Fields come from the provider's lifespan, each into its own field (``relativeMaximum`` stays
    ``relativeMaximum``); a present ``pool.spec.lifespan`` replaces the whole block. Raw strings are copied for
    ``default``, ``maximum`` and ``relativeMaximum``; ``end`` = now + ``unclaimed`` when there is one.
    """
    source = pool_lifespan if pool_lifespan is not None else (provider_lifespan or {})
    lifespan = {key: str(source[key]) for key in ("default", "maximum", "relativeMaximum") if source.get(key)}
    if source.get("unclaimed"):
        lifespan["end"] = timeutil.format_timestamp(unclaimed_end(source["unclaimed"], now))
    return lifespan

"""Bounded text for people: messages that may echo user input (a huge value, a long schema error) are cut."""

from __future__ import annotations

MAX_MESSAGE = 1024  # a condition message is read by people: long input echoed into it is cut, as Event messages are


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut in the middle to at most ``limit`` characters, keeping its start and its end (which often says
    what was wrong, e.g. "… is too long")."""
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return text[:keep] + "…" + text[len(text) - (limit - 1 - keep):]

"""Deadline-bound polling for tests: wait for a condition, never sleep-and-hope."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def wait_for(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02,
             message: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as error:
            last_error = error
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}; last error: {last_error!r}")


def holds_until(invariant: Callable[[], Any], control: Callable[[], Any], timeout: float = 30.0,
                interval: float = 0.1, extend: float = 0.0, message: str = "the control") -> int:
    """Check ``invariant`` (an assertion) on every poll until ``control`` holds, then for ``extend`` times as long
    again, and return how many checks it passed: what must *not* happen is watched over a window that something
    which does happen in it (the control) shows to be long enough. Fails when the control does not hold within
    ``timeout``."""
    start = time.monotonic()
    checks = 0
    while True:
        invariant()
        checks += 1
        if control():
            break
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}, the window's control")
        time.sleep(interval)
    end = time.monotonic() + extend * (time.monotonic() - start)
    while time.monotonic() < end:
        time.sleep(interval)
        invariant()
        checks += 1
    return checks


def blocked_in(thread: threading.Thread, function: str) -> bool:
    """Whether ``thread`` waits on a condition or event inside ``function``, as its stack shows: the positive sign
    that a call blocks, where watching it not return for a while would only hope the while was long enough."""
    frame = sys._current_frames().get(thread.ident) if thread.ident is not None else None
    names: list[str] = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return "wait" in names and function in names[names.index("wait"):]

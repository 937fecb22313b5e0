"""Watch helpers: collect events from ``kubernetes.watch.Watch`` streams, synchronously or in a thread.

Events are kept as ``(type, raw_object)`` pairs: the raw JSON is what the server sent, so assertions see the
wire format (bookmark annotations, Status objects in ERROR events) rather than the client's models.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import watch

Event = tuple[str, dict[str, Any]]


def replay(func: Callable[..., Any], *args: Any, count: int, timeout_seconds: int = 5,
           include_bookmarks: bool = False, **kwargs: Any) -> list[Event]:
    """Read a watch until ``count`` events arrived (or the server-side timeout ended the stream)."""
    stream = watch.Watch()
    events: list[Event] = []
    for event in stream.stream(func, *args, timeout_seconds=timeout_seconds,
                               _request_timeout=timeout_seconds + 10, **kwargs):
        if event["type"] == "BOOKMARK" and not include_bookmarks:
            continue
        events.append((event["type"], event["raw_object"]))
        if len(events) >= count:
            stream.stop()
    return events


def summary(events: list[Event]) -> list[tuple[str, str]]:
    """(type, name) of each event, the form most assertions compare against."""
    return [(kind, obj.get("metadata", {}).get("name", "")) for kind, obj in events]


def resource_versions(events: list[Event]) -> list[int]:
    """Resource versions of the events, as integers (the server's are etcd-like counters)."""
    return [int(obj["metadata"]["resourceVersion"]) for _, obj in events]


class Watcher:
    """A watch read by a background thread while the test writes; ``stop()`` ends it promptly."""

    def __init__(self, func: Callable[..., Any], *args: Any, timeout_seconds: int = 20, **kwargs: Any) -> None:
        self.events: list[Event] = []
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, args=(func, args, timeout_seconds, kwargs), daemon=True)
        self._thread.start()

    def _run(self, func: Callable[..., Any], args: tuple[Any, ...], timeout_seconds: int,
             kwargs: dict[str, Any]) -> None:
        try:
            for event in self._watch.stream(func, *args, timeout_seconds=timeout_seconds,
                                            _request_timeout=timeout_seconds + 10, **kwargs):
                self.events.append((event["type"], event["raw_object"]))
        except BaseException as error:  # reported to the test through .error
            self.error = error
        finally:
            self.finished.set()

    def of_type(self, *types: str) -> list[Event]:
        return [event for event in list(self.events) if event[0] in types]

    def stop(self) -> None:
        """Stop reading and close the connection, so no thread outlives the test."""
        self._watch.stop()
        response = getattr(self._watch, "_resp", None)
        inner = getattr(response, "response", response)
        shutdown = getattr(inner, "shutdown", None)
        if shutdown is not None:
            with contextlib.suppress(Exception):  # the stream may already be closed
                shutdown()
        self._thread.join(timeout=5)

"""Watch streams: newline-delimited JSON events from a chunked response, 410 Gone as :class:`Gone`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
import urllib3

from poolboy.kube.errors import NetworkError, error_for
from poolboy.kube.transport import Transport


def watch_events(transport: Transport, path: str, *, resource_version: str | None = None,
                 label_selector: str | None = None, timeout_seconds: int = 300, allow_bookmarks: bool = True,
                 on_stream: Callable[[Any], None] | None = None) -> Iterator[dict]:
    """Yield raw watch events ``{"type", "object"}`` until the server ends the stream.

    ``on_stream`` receives the open urllib3 response, so another thread can interrupt a quiet stream with
    ``response.shutdown()`` (how an informer stops at once when its watcher loses leadership).

    The server closes the stream after ``timeout_seconds``; the socket read timeout is a little longer so a
    silent, dead connection is noticed too. 410 (as HTTP status or as an ERROR event) raises :class:`Gone`.
    """
    query: list[tuple[str, Any]] = [("watch", "true"), ("timeoutSeconds", int(timeout_seconds))]
    if resource_version:
        query.append(("resourceVersion", resource_version))
    if allow_bookmarks:
        query.append(("allowWatchBookmarks", "true"))
    if label_selector:
        query.append(("labelSelector", label_selector))
    timeout = (transport.timeout, timeout_seconds + transport.timeout)
    response = transport.send("GET", path, query=query, timeout=timeout)
    raw = response.response
    if on_stream is not None:
        on_stream(raw)
    try:
        for line in lines(raw):
            event = orjson.loads(line)
            if event.get("type") == "ERROR":
                status = event.get("object") or {}
                raise error_for(int(status.get("code") or 500), status)
            yield event
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise NetworkError(0, type(error).__name__, str(error)) from error
    finally:
        # Close rather than just release: a stream abandoned mid-way still has unread bytes, and a pooled
        # connection with leftovers would corrupt the next request made on it.
        raw.close()
        raw.release_conn()


def lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a chunked stream, reassembling lines split across chunks."""
    buffer = b""
    for chunk in response.stream(None, decode_content=True):
        buffer += chunk
        if b"\n" not in chunk:
            continue
        # one split per chunk: a burst's chunk holds many events, and cutting them off the front of the buffer one
        # by one copied the rest of it each time
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            line = line.strip()
            if line:
                yield line
    if buffer.strip():
        yield buffer.strip()

"""Log records an operator can use: the object a line is about, JSON for log pipelines, chatty lines demoted.

Only the standard :mod:`logging` machinery, so every component (watcher, Celery worker and beat, Flower) shares it:

* :func:`bind_key` marks the work key (``<kind>/<namespace>/<name>``) a block of code is about; the
  :class:`KeyFilter` on each handler stamps it on every record logged meanwhile in that thread, so a line from
  deep inside a reconciler still names its object.
* :class:`JsonFormatter`: one JSON object per line with ``time``, ``level``, ``logger``, ``message``, the
  object's ``kind``/``namespace``/``name`` when known, and ``exception`` (the traceback) when there is one.
* :class:`Demote`: logs a third-party library's routine lines (a task received, a periodic entry sent) at DEBUG
  instead of INFO, without silencing that library's warnings and errors.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

#: the values of ``--log-format`` / ``POOLBOY_LOG_FORMAT``
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("poolboy_log_key", default=None)


@contextmanager
def bind_key(key: str) -> Iterator[None]:
    """Every record logged in this block (this thread) is about the object with work key ``key``."""
    token = _key.set(key)
    try:
        yield
    finally:
        _key.reset(token)


def key_fields(key: str | None) -> dict[str, str]:
    """``{"kind", "namespace", "name"}`` of a work key; empty for no key (or one that is not a work key)."""
    if not key:
        return {}
    parts = key.split("/", 2)
    if len(parts) != 3:
        return {}
    return dict(zip(("kind", "namespace", "name"), parts, strict=True))


class KeyFilter(logging.Filter):
    """Stamps the bound work key on each record as ``record.key`` (a record that already has one keeps it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "key", None) is None:
            record.key = _key.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record; fields a pipeline can index without parsing the message."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **key_fields(getattr(record, "key", None)),
        }
        if record.processName and record.processName != "MainProcess":
            document["process"] = record.processName
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            document["exception"] = record.exc_text
        if record.stack_info:
            document["stack"] = self.formatStack(record.stack_info)
        return json.dumps(document, ensure_ascii=False, default=str)


class Demote(logging.Filter):
    """Logs INFO records that ``matches`` accepts at DEBUG: they pass only where DEBUG is enabled.

    A filter on a *logger* runs after the logger's own level check, so the library still creates the record at
    INFO; the filter lowers it and drops it unless the logger is enabled for DEBUG. Warnings and errors of the
    same logger are untouched.
    """

    def __init__(self, logger: logging.Logger, matches: Callable[[logging.LogRecord], bool] = lambda _: True):
        super().__init__()
        self.logger = logger
        self.matches = matches

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not self.matches(record):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return self.logger.isEnabledFor(logging.DEBUG)


def demote(logger_name: str, matches: Callable[[logging.LogRecord], bool] = lambda _: True) -> None:
    """Log ``logger_name``'s INFO records that ``matches`` accepts at DEBUG (once per logger; idempotent)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(existing, Demote) for existing in logger.filters):
        logger.addFilter(Demote(logger, matches))


def formatter(fmt: str, text_format: str = TEXT_FORMAT) -> logging.Formatter:
    """The formatter of ``--log-format`` ``fmt`` (``text`` uses ``text_format``)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return JsonFormatter() if fmt == "json" else logging.Formatter(text_format)


def decorate(handler: logging.Handler, fmt: str) -> None:
    """Give a handler someone else set up (Celery's) the key stamp and, for ``json``, the JSON formatter."""
    if not any(isinstance(existing, KeyFilter) for existing in handler.filters):
        handler.addFilter(KeyFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())


def configure(level: str, fmt: str) -> None:
    """Root logging of a process that sets up its own (the watcher, Flower): one stderr handler."""
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(fmt))
    decorate(handler, fmt)
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    logging.captureWarnings(True)  # a Python warning becomes a record, so JSON output stays one object per line

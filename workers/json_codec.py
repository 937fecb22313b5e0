"""kombu's ``json`` serializer on orjson, with kombu's own codec for whatever orjson would write differently.

Why: every task message is decoded with it (Celery reads the body ``[[key], {}, embed]``) and every batch of task
events is encoded with it. kombu's codec is the standard library's, with a Python ``object_hook`` called for every
object and a Python ``default`` for every value JSON lacks, a visible share of a busy worker's CPU. orjson writes
and reads the same JSON for what these messages carry (strings, numbers, lists, maps).

What stays kombu's, so the wire format and what a reader gets back do not change:

* encoding anything orjson would write in its own way or not at all: ``datetime``/``date``/``time``, dataclasses
  and subclasses of built-in types (``OPT_PASSTHROUGH_*`` hands them to ``default``, which declines), ``bytes``,
  ``Decimal``, integers beyond 64 bits and maps with keys that are not strings (orjson raises). These go through
  kombu's encoder, with its ``{"__type__": …, "__value__": …}`` envelopes. A ``float('nan')`` is written ``null``
  by orjson and ``NaN`` by the standard library; no Celery or Poolboy message carries one.
* decoding any text that holds such an envelope (``"__type__"`` anywhere in it) or that orjson refuses (``NaN``,
  ``Infinity``): kombu's decoder turns them back into objects as before.

Two exceptions, both values no Celery or Poolboy message carries (Celery's ids, Poolboy's keys and the events'
clocks and timestamps are strings, 64-bit integers and floats): orjson writes a ``uuid.UUID`` as its string, where
kombu writes an envelope that decodes to a UUID; and it reads an integer beyond 64 bits as a float.

Installed with :func:`install` when the Celery app is made (:mod:`workers.app`): kombu's registry is process-wide,
and ``application/json`` keeps its name and content type, so Flower and any other consumer read the messages as
before.
"""

from __future__ import annotations

from typing import Any

import orjson
from kombu import serialization
from kombu.utils import json as kombu_json

_NATIVE_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
_ENVELOPE = "\"__type__\""
_ENVELOPE_BYTES = _ENVELOPE.encode()


def _decline(value: Any) -> Any:
    raise TypeError(f"left to kombu's encoder: {type(value).__name__}")


def dumps(obj: Any) -> str:
    """JSON text of ``obj``: orjson's for plain JSON values, kombu's for anything else."""
    try:
        return orjson.dumps(obj, default=_decline, option=_NATIVE_ONLY).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return kombu_json.dumps(obj)


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """The value of JSON ``data``: orjson's reading, unless it holds a kombu envelope or JSON orjson refuses."""
    if isinstance(data, memoryview | bytearray):
        data = bytes(data)
    if (_ENVELOPE_BYTES in data) if isinstance(data, bytes) else (_ENVELOPE in data):
        return kombu_json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return kombu_json.loads(data)


def install() -> None:
    """Make this codec kombu's ``json`` serializer in this process (encoding by name, decoding by content type)."""
    serialization.register("json", dumps, loads, content_type="application/json", content_encoding="utf-8")

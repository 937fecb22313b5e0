"""workers.json_codec: kombu's json serializer on orjson writes and reads what kombu's own codec does."""

from __future__ import annotations

import datetime
import decimal
import json
import math

import pytest
from kombu import serialization
from kombu.utils import json as kombu_json

from workers import json_codec

PLAIN = [
    [["claim/ns/name"], {}, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}],
    {"hostname": "worker0@h", "timestamp": 1764300000.123456, "type": "task-succeeded", "runtime": 0.0123,
     "uuid": "0b9c…", "clock": 12, "local_received": 1.5, "args": "['claim/ns/é']", "nested": [1, [2, [3]]]},
    "text with \"quotes\" and \\ and \u2603", 0, -1, 2**63 - 1, 1.5, True, False, None, [], {},
]


@pytest.mark.parametrize("value", PLAIN)
def test_plain_values_read_back_as_kombu_reads_them(value: object) -> None:
    text = json_codec.dumps(value)
    assert isinstance(text, str)
    assert json.loads(text) == json.loads(kombu_json.dumps(value))
    assert json_codec.loads(text) == kombu_json.loads(kombu_json.dumps(value))
    assert json_codec.loads(text.encode()) == json_codec.loads(memoryview(text.encode())) == value


@pytest.mark.parametrize("value", [
    {"eta": datetime.datetime(2026, 11, 28, 10, 0, tzinfo=datetime.UTC)},
    {"day": datetime.date(2026, 11, 28)},
    {"amount": decimal.Decimal("1.10")},
    {"raw": b"\x00\xffbytes"},
    {"big": 2**70},
    {1: "an int key"},
])
def test_values_orjson_would_write_differently_are_kombus(value: object) -> None:
    text = json_codec.dumps(value)
    assert text == kombu_json.dumps(value)
    assert json_codec.loads(text) == kombu_json.loads(text)


def test_envelopes_and_json_orjson_refuses_are_read_by_kombu() -> None:
    stamped = kombu_json.dumps({"eta": datetime.datetime(2026, 11, 28, 10, 0)})
    assert json_codec.loads(stamped) == {"eta": datetime.datetime(2026, 11, 28, 10, 0)}
    assert math.isnan(json_codec.loads('{"x": NaN}')["x"])


def test_install_makes_it_the_json_serializer() -> None:
    json_codec.install()
    content_type, encoding, body = serialization.dumps({"a": [1, "b"]}, serializer="json")
    assert (content_type, encoding) == ("application/json", "utf-8")
    assert serialization.loads(body, content_type, encoding) == {"a": [1, "b"]}
    assert serialization.registry._encoders["json"].encoder is json_codec.dumps

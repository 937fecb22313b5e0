"""OpenAPI 3.0 validation and schema defaults (docs/behaviour.md#claim-initialisation, #resource-validation,
#parameters)."""

from __future__ import annotations

import pytest

from poolboy.utils.merge import deep_merge
from poolboy.utils.schema import defaults_from_schema, format_path, openapi_to_jsonschema, validate, validate_value

CLAIM_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["spec"],
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "count": {"type": "integer", "minimum": 1, "maximum": 5},
                "size": {"type": "string", "enum": ["small", "large"]},
                "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 8},
                "note": {"type": "string", "nullable": True},
                "level": {"type": "string", "enum": ["a", "b"], "nullable": True},
                "start": {"type": "string", "format": "date-time"},
                "day": {"type": "string", "format": "date"},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "small": {"type": "integer", "format": "int32"},
                "blob": {"type": "string", "format": "byte"},
                "ports": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}}},
                },
                "any": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
        },
    },
}


def _spec(**fields):
    return {"spec": fields}


VALID = [
    _spec(),
    _spec(count=1),
    _spec(count=5),
    _spec(size="small"),
    _spec(name="abc"),
    _spec(note=None),
    _spec(note="x"),
    _spec(level=None),
    _spec(level="a"),
    _spec(start="2024-01-01T00:00:00Z"),
    _spec(start="2024-01-01T00:00:00.5+02:00"),
    _spec(day="2024-02-29"),
    _spec(ratio=0.1),
    _spec(small=2**31 - 1),
    _spec(blob="aGVsbG8="),
    _spec(ports=[{"port": 80}]),
    _spec(any=1),
    _spec(any="1"),
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"anything": {"goes": 1}}, "spec": {}},
]


@pytest.mark.parametrize("instance", VALID)
def test_valid(instance):
    assert validate(instance, CLAIM_SCHEMA) == []


INVALID = [
    (_spec(count="x"), ["spec.count: 'x' is not of type 'integer'"]),
    (_spec(count=1.5), ["spec.count: 1.5 is not of type 'integer'"]),
    (_spec(count=0), ["spec.count: 0 is less than the minimum of 1"]),
    (_spec(count=6), ["spec.count: 6 is greater than the maximum of 5"]),
    (_spec(count=True), ["spec.count: True is not of type 'integer'"]),
    (_spec(count=None), ["spec.count: None is not of type 'integer'"]),
    (_spec(size="medium"), ["spec.size: 'medium' is not one of ['small', 'large']"]),
    (_spec(name="ABC"), ["spec.name: 'ABC' does not match '^[a-z]+$'"]),
    (_spec(name="a"), ["spec.name: 'a' is too short"]),
    (_spec(name="abcdefghij"), ["spec.name: 'abcdefghij' is too long"]),
    (_spec(level="c"), ["spec.level: 'c' is not one of ['a', 'b', None]"]),
    (_spec(start="yesterday"), ["spec.start: 'yesterday' is not a 'date-time'"]),
    (_spec(day="2023-02-29"), ["spec.day: '2023-02-29' is not a 'date'"]),
    (_spec(day="2023-02-01T00:00:00Z"), ["spec.day: '2023-02-01T00:00:00Z' is not a 'date'"]),
    (_spec(ratio=0), ["spec.ratio: 0 is less than or equal to the minimum of 0"]),
    (_spec(small=2**31), [f"spec.small: {2**31} is not a 'int32'"]),
    (_spec(blob="not base64!"), ["spec.blob: 'not base64!' is not a 'byte'"]),
    (_spec(ports=[]), ["spec.ports: [] should be non-empty"]),
    (_spec(ports=[{"port": "x"}]), ["spec.ports[0].port: 'x' is not of type 'integer'"]),
    (_spec(ports=[{"port": 1}, {}]), ["spec.ports[1]: 'port' is a required property"]),
    (_spec(extra=1), ["spec: Additional properties are not allowed ('extra' was unexpected)"]),
    ({}, ["'spec' is a required property"]),
    ({"spec": {}, "other": 1}, ["Additional properties are not allowed ('other' was unexpected)"]),
    ({"spec": "x"}, ["spec: 'x' is not of type 'object'"]),
    (_spec(any=[1]), ["spec.any: [1] is not valid under any of the given schemas"]),
    (
        _spec(count="x", size="medium"),
        ["spec.count: 'x' is not of type 'integer'", "spec.size: 'medium' is not one of ['small', 'large']"],
    ),
]


@pytest.mark.parametrize(("instance", "messages"), INVALID)
def test_invalid_messages(instance, messages):
    assert validate(instance, CLAIM_SCHEMA) == messages


def test_messages_are_stable_across_calls():
    instance = _spec(size="medium", count="x", name="A", ports=[{}])
    first = validate(instance, CLAIM_SCHEMA)
    assert first == validate(instance, dict(reversed(list(CLAIM_SCHEMA.items()))))
    assert first == sorted(first)


@pytest.mark.parametrize("schema", [None, {}])
def test_no_schema_is_valid(schema):
    assert validate({"anything": 1}, schema) == []


def test_invalid_schema_is_reported_not_raised():
    assert validate({"a": 1}, {"type": "frobnicate"})[0].startswith("invalid schema: ")


@pytest.mark.parametrize(
    ("value", "schema", "messages"),
    [
        (3, {"type": "integer", "minimum": 1}, []),
        (0, {"type": "integer", "minimum": 1}, ["0 is less than the minimum of 1"]),
        ("x", {"type": "integer"}, ["'x' is not of type 'integer'"]),
        ("abc", {"type": "string", "pattern": "^a"}, []),
        ("b", {"type": "string", "enum": ["a"]}, ["'b' is not one of ['a']"]),
        (None, {"type": "string", "nullable": True}, []),
        (None, {"type": "string"}, ["None is not of type 'string'"]),
        (True, {"type": "boolean"}, []),
        ([1, "a"], {"type": "array", "items": {"type": "integer"}}, ["[1]: 'a' is not of type 'integer'"]),
        ({"a": 1}, {"type": "object", "additionalProperties": {"type": "string"}}, ["a: 1 is not of type 'string'"]),
        (5, None, []),
    ],
)
def test_validate_value(value, schema, messages):
    assert validate_value(value, schema) == messages


@pytest.mark.parametrize(
    ("schema", "translated"),
    [
        ({"type": "string", "nullable": True}, {"type": ["string", "null"]}),
        ({"type": "string", "nullable": False}, {"type": "string"}),
        ({"enum": ["a"], "type": "string", "nullable": True}, {"enum": ["a", None], "type": ["string", "null"]}),
        ({"x-kubernetes-preserve-unknown-fields": True, "type": "object"}, {"type": "object"}),
        (
            {"type": "object", "properties": {"a": {"type": "integer", "nullable": True}}},
            {"type": "object", "properties": {"a": {"type": ["integer", "null"]}}},
        ),
        ({"items": {"type": "string", "nullable": True}}, {"items": {"type": ["string", "null"]}}),
        ({"anyOf": [{"type": "string", "nullable": True}]}, {"anyOf": [{"type": ["string", "null"]}]}),
        (
            {"additionalProperties": {"type": "string", "x-kubernetes-list-type": "set"}},
            {"additionalProperties": {"type": "string"}},
        ),
        ({"additionalProperties": False}, {"additionalProperties": False}),
        ({"properties": {"nullable": {"type": "string"}}}, {"properties": {"nullable": {"type": "string"}}}),
    ],
)
def test_openapi_translation(schema, translated):
    assert openapi_to_jsonschema(schema) == translated


@pytest.mark.parametrize(
    ("path", "text"),
    [([], ""), (["spec"], "spec"), (["spec", "count"], "spec.count"), (["a", 0, "b"], "a[0].b"), ([0], "[0]")],
)
def test_format_path(path, text):
    assert format_path(path) == text


# ----------------------------------------------------------------------------------------------- defaults

DEFAULTS_CASES = [
    ({"type": "string", "default": "x"}, "x"),
    ({"type": "integer", "default": 0}, 0),
    ({"type": "string"}, None),
    (None, None),
    ({}, None),
    ({"type": "object"}, {}),
    ({"type": "object", "properties": {"a": {"type": "string"}}}, {}),
    ({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}, {"a": "x"}),
    ({"type": "object", "properties": {"a": {"type": "integer", "default": 0}}}, {"a": 0}),
    ({"type": "object", "properties": {"a": {"type": "boolean", "default": False}}}, {"a": False}),
    (
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "string", "default": "small"},
                        "count": {"type": "integer", "default": 1},
                        "name": {"type": "string"},
                    },
                }
            },
        },
        {"spec": {"size": "small", "count": 1}},
    ),
    # only through properties of type: object — a property without type is not descended into
    ({"type": "object", "properties": {"spec": {"properties": {"a": {"default": 1}}}}}, {}),
    # arrays are not descended into
    (
        {
            "type": "object",
            "properties": {
                "l": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}},
                }
            },
        },
        {},
    ),
    ({"type": "object", "properties": {"l": {"type": "array", "default": [1]}}}, {"l": [1]}),
    # an object property's own default is filled with nested defaults
    (
        {
            "type": "object",
            "properties": {
                "o": {
                    "type": "object",
                    "default": {"a": 1},
                    "properties": {"a": {"type": "integer", "default": 9}, "b": {"type": "integer", "default": 2}},
                }
            },
        },
        {"o": {"a": 1, "b": 2}},
    ),
    # the top-level schema's own default wins, filled with property defaults
    ({"type": "object", "default": {"a": 5}, "properties": {"a": {"type": "integer", "default": 1}}}, {"a": 5}),
    ({"type": "object", "properties": {"a": {"type": "string", "default": None}}}, {"a": None}),
    ({"type": "object", "properties": {"a": "not a schema"}}, {}),
    (
        {
            "type": "object",
            "properties": {
                "deep": {
                    "type": "object",
                    "properties": {
                        "deeper": {"type": "object", "properties": {"x": {"type": "string", "default": "y"}}}
                    },
                }
            },
        },
        {"deep": {"deeper": {"x": "y"}}},
    ),
]


@pytest.mark.parametrize(("schema", "expected"), DEFAULTS_CASES)
def test_defaults_from_schema(schema, expected):
    assert defaults_from_schema(schema) == expected


def test_defaults_do_not_alias_schema():
    schema = {"type": "object", "properties": {"l": {"type": "array", "default": [1]}}}
    defaults_from_schema(schema)["l"].append(2)
    assert schema["properties"]["l"]["default"] == [1]


def test_defaults_fill_claim_template_without_overwriting():
    schema = CLAIM_SCHEMA | {
        "properties": CLAIM_SCHEMA["properties"]
        | {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "string", "default": "small"},
                    "count": {"type": "integer", "default": 1},
                },
            }
        }
    }
    template = {"spec": {"size": "large"}}
    assert deep_merge(template, defaults_from_schema(schema), overwrite=False) == {
        "spec": {"size": "large", "count": 1}
    }

"""OpenAPI 3.0 schema validation and defaults (docs/behaviour.md#resources ``validation.openAPIV3Schema``,
docs/behaviour.md#claim-initialisation, #resource-validation, #parameters).

Why a translation step: ``jsonschema`` speaks JSON Schema, not OpenAPI 3.0. OpenAPI 3.0 schema objects are close to
JSON Schema draft 4 (boolean ``exclusiveMinimum``/``exclusiveMaximum``, ``integer`` excludes ``1.0``), so we validate
with ``Draft4Validator`` after rewriting ``nullable: true`` into a ``"null"`` type (and a ``None`` enum member) and
dropping the ``x-kubernetes-*`` extension keywords. ``additionalProperties: false``, ``enum``, ``pattern``,
``required``, ``minimum``/``maximum``, ``minLength``, ``minItems``… keep their JSON Schema meaning. Formats checked:
``date-time``, ``date``, ``email``, ``hostname``, ``ipv4``, ``ipv6``, ``uri``, ``regex``, ``int32``, ``int64``,
``byte``; unknown formats are accepted.

Message format (reconcilers copy it verbatim into ``validationError`` / ``validationErrors``)::

    <path>: <jsonschema message>      e.g.  spec.count: 'x' is not of type 'integer'
    <jsonschema message>              when the error is at the document root

``<path>`` joins map keys with ``.`` and writes list indexes as ``[i]`` (``spec.ports[0].port``). Several errors are
returned sorted by path, then message, so the text is stable from one reconcile to the next. A schema that is itself
invalid yields one message ``invalid schema: <reason>`` instead of raising, because a bad provider schema is a
permanent, user-fixable error.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from datetime import date
from functools import lru_cache
from typing import Any

import orjson
from jsonschema import Draft4Validator, FormatChecker
from jsonschema.exceptions import SchemaError, ValidationError

from poolboy.utils.merge import deep_merge
from poolboy.utils.text import shorten

__all__ = ["defaults_from_schema", "openapi_to_jsonschema", "schema_error", "validate", "validate_value"]

_SCHEMA_KEYS = ("additionalProperties", "items", "not", "additionalItems")
_SCHEMA_LIST_KEYS = ("allOf", "anyOf", "oneOf")
_SCHEMA_MAP_KEYS = ("properties", "patternProperties", "definitions")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=list(Draft4Validator.FORMAT_CHECKER.checkers))
    checker.checkers.update(Draft4Validator.FORMAT_CHECKER.checkers)

    @checker.checks("date", raises=ValueError)
    def _is_date(value: object) -> bool:
        if not isinstance(value, str):
            return True
        if not _DATE.match(value):
            return False
        date.fromisoformat(value)
        return True

    @checker.checks("int32")
    def _is_int32(value: object) -> bool:
        return not isinstance(value, int) or -(2**31) <= value < 2**31

    @checker.checks("int64")
    def _is_int64(value: object) -> bool:
        return not isinstance(value, int) or -(2**63) <= value < 2**63

    @checker.checks("byte", raises=(binascii.Error, ValueError))
    def _is_byte(value: object) -> bool:
        if isinstance(value, str):
            base64.b64decode(value, validate=True)
        return True

    return checker


_FORMAT_CHECKER = _format_checker()


def openapi_to_jsonschema(schema: Any) -> Any:
    """Translate an OpenAPI 3.0 schema object into draft-4 JSON Schema (``nullable``, ``x-kubernetes-*``)."""
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-kubernetes-") or key == "nullable":
            continue
        if key in _SCHEMA_KEYS:
            result[key] = (
                [openapi_to_jsonschema(v) for v in value] if isinstance(value, list) else (openapi_to_jsonschema(value))
            )
        elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
            result[key] = [openapi_to_jsonschema(v) for v in value]
        elif key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
            result[key] = {name: openapi_to_jsonschema(sub) for name, sub in value.items()}
        else:
            result[key] = copy.deepcopy(value)
    if schema.get("nullable") is True:
        _allow_null(result)
    return result


def _allow_null(result: dict[str, Any]) -> None:
    kind = result.get("type")
    if isinstance(kind, str) and kind != "null":
        result["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        result["type"] = [*kind, "null"]
    if isinstance(result.get("enum"), list) and None not in result["enum"]:
        result["enum"] = [*result["enum"], None]


@lru_cache(maxsize=512)
def _validator(schema_json: bytes) -> Draft4Validator | str:
    """A compiled validator per schema (keyed by canonical JSON), or the reason the schema is invalid."""
    schema = openapi_to_jsonschema(orjson.loads(schema_json))
    try:
        Draft4Validator.check_schema(schema)
    except SchemaError as error:
        return f"invalid schema: {error.message}"
    return Draft4Validator(schema, format_checker=_FORMAT_CHECKER)


def schema_error(openapi_v3_schema: Any) -> tuple[str, str] | None:
    """Why a provider's schema is not a valid schema (``None`` when it is): ``(path in the schema, reason)``.

    Why apart from :func:`validate`: a broken schema is the administrator's mistake, reported on the provider, while
    :func:`validate` answers "does this value pass". The path is relative to the schema (``type`` for
    ``{type: strng}``) so the caller can prefix the field that holds it.
    """
    if not isinstance(openapi_v3_schema, dict):
        return "", f"must be a mapping, not {type(openapi_v3_schema).__name__}"
    try:
        Draft4Validator.check_schema(openapi_to_jsonschema(openapi_v3_schema))
    except SchemaError as error:
        return format_path(error.absolute_path), shorten(error.message, MAX_MESSAGE)
    return None


def _schema_key(schema: Any) -> bytes:
    return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def format_path(path: Any) -> str:
    """``spec.ports[0].port`` from a jsonschema ``absolute_path`` deque."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


MAX_MESSAGE = 300  # jsonschema messages embed the offending value's repr, which may be megabytes


def _message(error: ValidationError) -> str:
    path = format_path(error.absolute_path)
    message = shorten(error.message, MAX_MESSAGE)
    return f"{path}: {message}" if path else message


def validate(instance: Any, openapi_v3_schema: dict | None) -> list[str]:
    """Messages for every violation of ``openapi_v3_schema`` by ``instance`` (empty when valid, or no schema)."""
    if not openapi_v3_schema:
        return []
    try:
        validator = _validator(_schema_key(openapi_v3_schema))
    except (TypeError, orjson.JSONEncodeError) as error:
        return [f"invalid schema: {error}"]
    if isinstance(validator, str):
        return [validator]
    errors = sorted(validator.iter_errors(instance), key=lambda e: ([str(p) for p in e.absolute_path], e.message))
    return [_message(error) for error in errors]


def validate_value(value: Any, schema: dict | None) -> list[str]:
    """Validate one parameter value; messages are relative to the value (root errors carry no path)."""
    return validate(value, schema)


def defaults_from_schema(schema: Any) -> Any:
    """Defaults declared in a schema (docs/behaviour.md#claim-initialisation): collected recursively, only through
    ``type: object`` properties.

    For an object schema returns a dict (possibly empty): each property's ``default`` (filled with its own nested
    defaults when it is itself an object), or the nested defaults of an object property that has no ``default``
    (left out when empty, so no empty maps are added to templates). For any other schema returns its
    ``default``, or ``None``.
    """
    if not isinstance(schema, dict):
        return None
    if schema.get("type") != "object":
        return copy.deepcopy(schema.get("default"))
    collected: dict[str, Any] = {}
    properties = schema.get("properties")
    for name, prop in (properties if isinstance(properties, dict) else {}).items():
        if not isinstance(prop, dict):
            continue
        if "default" in prop:
            value = copy.deepcopy(prop["default"])
            if prop.get("type") == "object" and isinstance(value, dict):
                value = deep_merge(value, defaults_from_schema(prop), overwrite=False)
            collected[name] = value
        elif prop.get("type") == "object":
            nested = defaults_from_schema(prop)
            if nested:
                collected[name] = nested
    if isinstance(schema.get("default"), dict):
        collected = deep_merge(copy.deepcopy(schema["default"]), collected, overwrite=False)
    return collected

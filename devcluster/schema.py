"""Structural-schema handling for custom resources, in kube-apiserver's order: default, prune, validate.

Errors are ``{reason, message, field}`` causes whose ``message`` reads like the real server's
(``spec.x: Invalid value: "y": spec.x in body must be of type integer: "string"``).
"""

from __future__ import annotations

import copy
import re
from datetime import datetime
from functools import lru_cache
from typing import Any

Cause = dict[str, str]

METADATA_FIELDS = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields",
}
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '"null"'
    if isinstance(value, (dict, list)):
        return '"' + _type_name(value) + '"'
    return str(value)


def _cause(reason: str, path: str, detail: str) -> Cause:
    return {"reason": reason, "field": path, "message": f"{path}: {detail}"}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# --- defaulting ----------------------------------------------------------------------------------------------


def apply_defaults(value: Any, schema: dict[str, Any] | None) -> Any:
    """Fill ``default:`` values for missing (or null, when not nullable) properties, recursively."""
    if not schema:
        return value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if "default" in sub and (key not in value or (value[key] is None and not sub.get("nullable"))):
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = apply_defaults(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in properties:
                    value[key] = apply_defaults(value[key], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(item, schema["items"]) for item in value]
    return value


# --- pruning -------------------------------------------------------------------------------------------------


def prune(value: Any, schema: dict[str, Any] | None, root: bool = False) -> Any:
    """Drop fields the schema does not declare, except under ``x-kubernetes-preserve-unknown-fields``."""
    if schema is None:
        return value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        preserve = schema.get(PRESERVE) or extra is True
        for key in list(value):
            if root and key in ("apiVersion", "kind"):
                continue
            if root and key == "metadata":
                if isinstance(value[key], dict):
                    for meta_key in [k for k in value[key] if k not in METADATA_FIELDS]:
                        del value[key][meta_key]
                continue
            if key in properties:
                if value[key] is None and not properties[key].get("nullable"):
                    del value[key]  # since Kubernetes 1.20 nulls in non-nullable fields are dropped
                    continue
                value[key] = prune(value[key], properties[key])
            elif isinstance(extra, dict):
                value[key] = prune(value[key], extra)
            elif not preserve and extra is not False:
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(item, schema["items"]) for item in value]
    return value


# --- validation ----------------------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    expected = schema.get("type")
    if schema.get(INT_OR_STRING):
        return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)
    if not expected:
        return True
    actual = _type_name(value)
    return actual == expected or (expected == "number" and actual == "integer")


def _valid_datetime(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in text.upper() or " " in text


def validate(value: Any, schema: dict[str, Any] | None, path: str = "", root: bool = True) -> list[Cause]:
    """All schema violations of ``value`` (already defaulted and pruned) as Status causes."""
    causes: list[Cause] = []
    if schema:
        _validate(value, schema, path, causes, root)
    return causes


def _validate(value: Any, schema: dict[str, Any], path: str, causes: list[Cause], root: bool = False) -> None:
    if value is None:
        if not schema.get("nullable") and (schema.get("type") or schema.get(INT_OR_STRING)):
            causes.append(_cause("FieldValueTypeInvalid", path, f'Invalid value: "null": {path} in body must be '
                                 f'of type {schema.get("type") or "integer-or-string"}: "null"'))
        return
    if not _type_ok(value, schema):
        expected = schema.get("type") or "integer-or-string"
        causes.append(_cause("FieldValueTypeInvalid", path, f'Invalid value: "{_type_name(value)}": {path} in '
                             f'body must be of type {expected}: "{_type_name(value)}"'))
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_quote(v) for v in schema["enum"])
        causes.append(_cause("FieldValueNotSupported", path,
                             f"Unsupported value: {_quote(value)}: supported values: {supported}"))
    if isinstance(value, str):
        _validate_string(value, schema, path, causes)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(value, schema, path, causes)
    elif isinstance(value, list):
        _validate_array(value, schema, path, causes)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, causes, root)


def _validate_string(value: str, schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(_cause("FieldValueTooLong", path, f"Too long: may not be more than {schema['maxLength']} "
                             "bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(_cause("FieldValueInvalid", path, f'Invalid value: "{value}": {path} in body should be at '
                             f"least {schema['minLength']} chars long"))
    if "pattern" in schema and not _regex(schema["pattern"]).search(value):
        causes.append(_cause("FieldValueInvalid", path, f'Invalid value: "{value}": {path} in body should match '
                             f"'{schema['pattern']}'"))
    if schema.get("format") == "date-time" and not _valid_datetime(value):
        causes.append(_cause("FieldValueInvalid", path, f'Invalid value: "{value}": {path} in body must be of '
                             f'type date-time: "{value}"'))


def _validate_number(value: float, schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") and value == low):
            word = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
            causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {value}: {path} in body should be "
                                 f"{word} {low}"))
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") and value == high):
            word = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {value}: {path} in body should be "
                                 f"{word} {high}"))
    if "multipleOf" in schema and schema["multipleOf"] and value % schema["multipleOf"]:
        causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {value}: {path} in body should be a "
                             f"multiple of {schema['multipleOf']}"))


def _validate_array(value: list[Any], schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(_cause("FieldValueTooMany", path, f"Too many: {len(value)}: must have at most "
                             f"{schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {len(value)}: {path} in body should "
                             f"have at least {schema['minItems']} items"))
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _validate(item, items, f"{path}[{index}]", causes)


def _validate_object(value: dict[str, Any], schema: dict[str, Any], path: str, causes: list[Cause],
                     root: bool) -> None:
    properties = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in value:
            causes.append(_cause("FieldValueRequired", _join(path, key), "Required value"))
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if root and key == "metadata" and isinstance(item, dict) and "metadata" in properties:
            meta_schema = properties["metadata"].get("properties") or {}
            for meta_key in ("name", "generateName"):
                if meta_key in item and meta_key in meta_schema:
                    _validate(item[meta_key], meta_schema[meta_key], f"metadata.{meta_key}", causes)
            continue
        if root and key in ("apiVersion", "kind", "metadata"):
            continue
        if key in properties:
            _validate(item, properties[key], _join(path, key), causes)
        elif isinstance(extra, dict):
            _validate(item, extra, _join(path, key), causes)
        elif extra is False:
            causes.append(_cause("FieldValueForbidden", _join(path, key),
                                 "Forbidden: additional properties are not allowed"))


def structural_causes(schema: Any, path: str) -> list[Cause]:
    """The structural-schema rules kube-apiserver enforces on CRD creation that tests rely on."""
    causes: list[Cause] = []
    if not isinstance(schema, dict):
        return causes
    if "properties" in schema and "additionalProperties" in schema:
        causes.append(_cause("FieldValueForbidden", f"{path}.additionalProperties",
                             "Forbidden: additionalProperties and properties are mutual exclusive"))
    for key, sub in (schema.get("properties") or {}).items():
        causes += structural_causes(sub, f"{path}.properties[{key}]")
    if isinstance(schema.get("items"), dict):
        causes += structural_causes(schema["items"], f"{path}.items")
    if isinstance(schema.get("additionalProperties"), dict):
        causes += structural_causes(schema["additionalProperties"], f"{path}.additionalProperties")
    return causes

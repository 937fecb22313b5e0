"""Server-side printing (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``) so ``kubectl get`` shows the
same columns as against a real cluster: built-in kinds' columns and CRDs' ``additionalPrinterColumns``."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from devcluster.registry import ResourceType

Obj = dict[str, Any]
Column = tuple[dict[str, Any], Callable[[Obj], Any]]
_FILTER = re.compile(r"""^\?\(@\.([\w.]+)\s*==\s*["']?([^"')]*)["']?\)$""")


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery's HumanDuration (the AGE column)."""
    s = int(seconds)
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y{days % 365}d" if days < 365 * 8 else f"{days // 365}y"


def age(timestamp: Any) -> str | None:
    if not isinstance(timestamp, str):
        return None
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return timestamp
    return human_duration((datetime.now(UTC) - moment).total_seconds())


def _step(value: Any, token: str) -> list[Any]:
    """What one path token selects from one value."""
    if not token.startswith("["):
        return [value[token]] if isinstance(value, dict) and token in value else []
    inner = token[1:-1]
    if "," in inner:  # a union of fields: ['a','b'] selects a, then b ('a.b' is one key, as kube-apiserver reads it)
        return [found for part in inner.split(",") for found in _step(value, part.strip().strip("'\""))]
    if inner.startswith(("'", '"')):  # ['key']: a field, as .key
        return _step(value, inner.strip("'\""))
    if not isinstance(value, list):
        return []
    if inner == "*":
        return list(value)
    if inner.lstrip("-").isdigit():
        index = int(inner)
        return [value[index]] if -len(value) <= index < len(value) else []
    match = _FILTER.match(inner)
    return [v for v in value if str(jsonpath(v, match[1])) == match[2]] if match else []


def values(obj: Any, path: str) -> list[Any]:
    """Every value the path selects, in order (missing keys select nothing, as with ``AllowMissingKeys``)."""
    tokens = re.findall(r"\[[^\]]*\]|[^.\[\]]+", path.strip().strip("{}").lstrip("."))
    selected = [obj]
    for token in tokens:
        selected = [found for value in selected for found in _step(value, token)]
    return selected


def jsonpath(obj: Any, path: str) -> Any:
    """A printer column's cell: the first value the path selects, as the API server's table convertor takes it.

    The subset CRD printer columns use: ``.a.b``, ``[n]``, ``[*]``, ``[?(@.k=="v")]``, ``['k']`` (a key, dots
    included, as in ``.metadata.annotations['example.com/x']``) and the union of keys ``['a','b']``.
    """
    found = values(obj, path)
    return found[0] if found else None


def _col(name: str, kind: str = "string", fmt: str = "", priority: int = 0, description: str = "") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": fmt, "description": description or name, "priority": priority}


NAME: Column = (_col("Name", fmt="name", description="Name must be unique within a namespace."),
                lambda o: o["metadata"]["name"])
AGE: Column = (_col("Age", description="CreationTimestamp is a timestamp representing the server time when this "
                    "object was created."), lambda o: age(o["metadata"].get("creationTimestamp")))


def _count(*fields: str) -> Callable[[Obj], int]:
    return lambda o: sum(len(o.get(f) or {}) for f in fields)


BUILTIN_COLUMNS: dict[tuple[str, str], list[Column]] = {
    ("", "namespaces"): [NAME, (_col("Status"), lambda o: (o.get("status") or {}).get("phase")), AGE],
    ("", "configmaps"): [NAME, (_col("Data", "integer"), _count("data", "binaryData")), AGE],
    ("", "secrets"): [NAME, (_col("Type"), lambda o: o.get("type")), (_col("Data", "integer"), _count("data")),
                      AGE],
    ("", "serviceaccounts"): [NAME, (_col("Secrets", "integer"), _count("secrets")), AGE],
    ("", "events"): [
        (_col("Last Seen"), lambda o: age(o.get("lastTimestamp") or o.get("eventTime")
                                          or o["metadata"].get("creationTimestamp"))),
        (_col("Type"), lambda o: o.get("type")), (_col("Reason"), lambda o: o.get("reason")),
        (_col("Object"), lambda o: "{}/{}".format(str((o.get("involvedObject") or {}).get("kind", "")).lower(),
                                                   (o.get("involvedObject") or {}).get("name", ""))),
        (_col("Message"), lambda o: o.get("message")),
    ],
    ("coordination.k8s.io", "leases"): [NAME, (_col("Holder"), lambda o: (o.get("spec") or {}).get(
        "holderIdentity")), AGE],
    ("apiextensions.k8s.io", "customresourcedefinitions"): [
        NAME, (_col("Created At", "date"), lambda o: o["metadata"].get("creationTimestamp"))],
}


def typed_cell(kind: str, value: Any) -> Any:
    """A non-string column's cell as the API server's table convertor makes it (``cellForJSONValue``): a value
    not of the column's type is no value, so a ``boolean`` column over the string ``"False"`` shows nothing."""
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind in ("integer", "number") and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if kind == "integer" else float(value)
    return None


def _custom_columns(rtype: ResourceType) -> list[Column]:
    if not rtype.printer_columns:
        return [NAME, AGE]
    columns = [NAME]
    for spec in rtype.printer_columns:
        kind = spec.get("type", "string")
        path = spec.get("jsonPath", "")
        definition = _col(spec["name"], kind, spec.get("format", ""), spec.get("priority", 0),
                          spec.get("description", ""))
        if kind == "date":
            columns.append((definition, lambda o, p=path: age(jsonpath(o, p))))
        elif kind in ("boolean", "integer", "number"):
            columns.append((definition, lambda o, p=path, k=kind: typed_cell(k, jsonpath(o, p))))
        else:
            columns.append((definition, lambda o, p=path: jsonpath(o, p)))
    return columns


def columns_for(rtype: ResourceType) -> list[Column]:
    if rtype.builtin:
        return BUILTIN_COLUMNS.get(rtype.store_key, [NAME, AGE])
    return _custom_columns(rtype)


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(rtype: ResourceType, objects: list[Obj], list_meta: dict[str, Any], include: str) -> dict[str, Any]:
    columns = columns_for(rtype)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [getter(obj) for _, getter in columns]}
        embedded = _row_object(obj, include)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": [definition for definition, _ in columns], "rows": rows}

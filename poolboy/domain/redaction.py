"""What of a managed resource never leaves the resource (docs/security.md#7-secret-values-never-leak).

A claim's status is readable by everyone with ``view`` in its namespace, so the state mirrored there must not carry
values its readers could not read on the resource itself: a Secret's ``data`` and ``stringData`` keep their keys and
lose their values, and a provider's ``statusRedactions`` (``[{pathMatch}]``, regular expressions that fully match a
JSON pointer, as ``updateFilters``) name further fields of its resources. Pure, over JSON documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from poolboy.utils import jsonpatch

#: what a redacted value reads as
REDACTED = "<redacted>"
#: the fields of a core Secret whose values are secret
_SECRET_FIELDS = ("data", "stringData")
#: ``kubectl apply``'s copy of what was applied: a Secret's values again
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def is_secret(obj: Mapping[str, Any]) -> bool:
    return obj.get("apiVersion") == "v1" and obj.get("kind") == "Secret"


def _drop_secret_values(obj: dict[str, Any]) -> None:
    annotations = (obj.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        obj["metadata"]["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    for field in _SECRET_FIELDS:
        values = obj.get(field)
        if isinstance(values, dict):
            obj[field] = {key: REDACTED for key in values}
        elif values is not None:
            obj[field] = REDACTED


def patterns_of(redactions: Iterable[Mapping[str, Any]] | None) -> tuple[str, ...]:
    """The ``pathMatch`` regular expressions of a provider's ``statusRedactions``."""
    return tuple(str(r["pathMatch"]) for r in redactions or () if isinstance(r, Mapping) and r.get("pathMatch"))


def _redact_paths(value: Any, path: str, patterns: tuple[str, ...]) -> Any:
    if path and any(jsonpatch.path_matches(p, path) for p in patterns):
        return REDACTED
    if isinstance(value, dict):
        return {k: _redact_paths(v, f"{path}/{jsonpatch.escape_pointer(str(k))}", patterns) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_paths(v, f"{path}/{i}", patterns) for i, v in enumerate(value)]
    return value


def redact(obj: dict[str, Any], patterns: tuple[str, ...] = ()) -> dict[str, Any]:
    """``obj`` (a copy the caller owns) with secret values replaced by :data:`REDACTED`: a Secret's ``data`` and
    ``stringData`` values, and every field whose JSON pointer fully matches one of ``patterns``."""
    if is_secret(obj):
        _drop_secret_values(obj)
    if patterns:
        try:
            obj = _redact_paths(obj, "", patterns)
        except ValueError:  # an invalid pattern (the provider says so itself): show nothing but the identity
            return {key: obj[key] for key in ("apiVersion", "kind", "metadata") if key in obj}
    return obj

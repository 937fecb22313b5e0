"""A minimal OpenAPI v3 surface so kubectl (apply, create, edit) finds every kind and sees that the server does
field validation itself (``fieldValidation`` on PATCH), which makes kubectl skip client-side schema validation."""

from __future__ import annotations

import hashlib
from typing import Any

from devcluster.registry import Registry, ResourceType

PARAMETERS = [
    {"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
    for name in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
]


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def index(registry: Registry) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    seen = {(t.group, t.version) for t in registry.types.values()}
    for group, version in sorted(seen):
        path = _gv_path(group, version)
        digest = hashlib.sha1(repr(sorted(_kinds(registry, group, version))).encode()).hexdigest()[:16].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def _kinds(registry: Registry, group: str, version: str) -> list[str]:
    return [t.plural for t in registry.types.values() if t.group == group and t.version == version]


def _item_path(rtype: ResourceType) -> str:
    base = "/" + _gv_path(rtype.group, rtype.version)
    if rtype.namespaced:
        return f"{base}/namespaces/{{namespace}}/{rtype.plural}/{{name}}"
    return f"{base}/{rtype.plural}/{{name}}"


def document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = [t for t in registry.types.values() if t.group == group and t.version == version]
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rtype in types:
        gvk = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
        operation = {"x-kubernetes-group-version-kind": gvk, "parameters": PARAMETERS,
                     "responses": {"200": {"description": "OK"}}}
        paths[_item_path(rtype)] = {"get": operation, "put": operation, "patch": operation, "delete": operation}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (devcluster)", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}

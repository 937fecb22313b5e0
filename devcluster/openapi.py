"""A minimal OpenAPI v3 surface so kubectl (apply, create, edit) finds every kind and sees that the server does
field validation itself (``fieldValidation`` on PATCH), which makes kubectl skip client-side schema validation.

Each kind also gets a component schema tagged with ``x-kubernetes-group-version-kind``, which is how
``kubectl explain`` finds it: a CRD's own ``openAPIV3Schema``, or a bare object schema for built-in kinds."""

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
    schemas: dict[str, Any] = {}
    for rtype in types:
        gvk = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
        operation = {"x-kubernetes-group-version-kind": gvk, "parameters": PARAMETERS,
                     "responses": {"200": {"description": "OK"}}}
        paths[_item_path(rtype)] = {"get": operation, "put": operation, "patch": operation, "delete": operation}
        schemas[_schema_name(rtype)] = _component_schema(rtype, gvk)
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (devcluster)", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": schemas}}


def _schema_name(rtype: ResourceType) -> str:
    """The real server's naming: ``io.k8s.api.core.v1.ConfigMap`` style, reversed group for custom kinds."""
    group = ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    return f"{group}.{rtype.version}.{rtype.kind}"


def _component_schema(rtype: ResourceType, gvk: dict[str, str]) -> dict[str, Any]:
    schema = dict(rtype.schema) if rtype.schema else {
        "type": "object", "description": f"{rtype.kind} ({rtype.api_version}), served by devcluster."}
    schema["x-kubernetes-group-version-kind"] = [gvk]
    return schema

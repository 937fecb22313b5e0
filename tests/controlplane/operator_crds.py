"""Minimal CRDs for the other operators' kinds the chart renders (the Prometheus Operator's ServiceMonitor, KEDA's
ScaledObject and TriggerAuthentication), so that the API server has something to judge them against.

They are this project's own, not the upstream schemas: the upstream group, version, kind and scope, and the
upstream types and required fields of exactly the fields the chart sets. Every other field is unknown to them, so
the API server refuses it on helm's server-side apply (``field not declared in schema``)."""

from __future__ import annotations

from typing import Any

#: Prometheus' duration, as the Prometheus Operator's CRDs check ``interval``
DURATION = "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"


def crd(group: str, version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A namespaced CRD whose ``spec`` has the schema given."""
    plural = kind.lower() + "s"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": version, "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}}


def strings() -> dict[str, Any]:
    """A map of strings (labels, a KEDA trigger's metadata)."""
    return {"type": "object", "additionalProperties": {"type": "string"}}


def typed(properties: dict[str, str], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object of scalar fields (name -> JSON type)."""
    schema: dict[str, Any] = {"type": "object", "properties": {k: {"type": t} for k, t in properties.items()}}
    return {**schema, "required": list(required)} if required else schema


def items(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": schema}


def int32() -> dict[str, Any]:
    return {"type": "integer", "format": "int32"}


SERVICE_MONITOR = crd("monitoring.coreos.com", "v1", "ServiceMonitor", {
    "type": "object", "required": ["selector"], "properties": {
        "selector": {"type": "object", "properties": {"matchLabels": strings()}},
        "endpoints": items({"type": "object", "properties": {
            "port": {"type": "string"}, "path": {"type": "string"},
            "interval": {"type": "string", "pattern": DURATION}}})}})
SCALED_OBJECT = crd("keda.sh", "v1alpha1", "ScaledObject", {
    "type": "object", "required": ["scaleTargetRef", "triggers"], "properties": {
        "scaleTargetRef": typed({"name": "string", "kind": "string", "apiVersion": "string"}, ("name",)),
        "minReplicaCount": int32(), "maxReplicaCount": int32(), "pollingInterval": int32(), "cooldownPeriod": int32(),
        "triggers": items({"type": "object", "required": ["type", "metadata"], "properties": {
            "type": {"type": "string"}, "metricType": {"type": "string"}, "metadata": strings(),
            "authenticationRef": typed({"name": "string", "kind": "string"}, ("name",))}})}})
TRIGGER_AUTHENTICATION = crd("keda.sh", "v1alpha1", "TriggerAuthentication", {
    "type": "object", "properties": {
        "secretTargetRef": items(typed({"parameter": "string", "name": "string", "key": "string"},
                                       ("parameter", "name", "key")))}})
OPERATOR_CRDS = [SERVICE_MONITOR, SCALED_OBJECT, TRIGGER_AUTHENTICATION]

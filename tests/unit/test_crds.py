"""The CRDs in ``helm/crds/``: structural, complete against docs/behaviour.md#resources, and validating the way the spec
needs.

Pure and fast: the schemas are read from disk and sample objects are checked with ``jsonschema`` (the
``x-kubernetes-*`` keywords are unknown to it and ignored, which matches their meaning closely enough here).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from devcluster.tables import jsonpath, typed_cell
from poolboy import DEFAULT_DOMAIN
from stack.crds import SOURCE_CRDS_DIR, load_crds, write_crds

KINDS = ["ResourceProvider", "ResourceClaim", "ResourceHandle", "ResourcePool", "ResourcePoolScaling",
         "ResourceWatch"]
WITH_STATUS_SUBRESOURCE = {"ResourceProvider", "ResourceClaim", "ResourceHandle", "ResourcePool",
                           "ResourcePoolScaling"}

#: short names of built-in Kubernetes and OpenShift kinds that ours must not shadow
BUILTIN_SHORT_NAMES = {
    "cm", "cs", "csr", "crd", "crds", "cj", "deploy", "ds", "ep", "ev", "hpa", "ing", "limits", "netpol", "no",
    "ns", "pc", "pdb", "po", "psp", "pv", "pvc", "quota", "rc", "rs", "sa", "sc", "sts", "svc", "rq", "rb", "cr",
    "bc", "dc", "is", "istag", "isimage", "route", "project", "rolebinding", "vac", "ipa", "cidr", "ic",
}

#: kind -> paths that docs/behaviour.md#resources (fields and status shapes) requires; ``[]`` steps into array items
FIELDS: dict[str, list[str]] = {
    "ResourceProvider": [
        "spec.approval.required", "spec.approval.pendingMessage", "spec.default", "spec.disableCreation",
        "spec.healthCheck", "spec.readinessCheck", "spec.lifespan.default", "spec.lifespan.maximum",
        "spec.lifespan.relativeMaximum", "spec.lifespan.unclaimed", "spec.linkedResourceProviders[].name",
        "spec.linkedResourceProviders[].parameterValues", "spec.linkedResourceProviders[].resourceName",
        "spec.linkedResourceProviders[].templateVars[].name", "spec.linkedResourceProviders[].templateVars[].from",
        "spec.linkedResourceProviders[].waitFor", "spec.linkedResourceProviders[].when", "spec.match",
        "spec.matchIgnore[]", "spec.override", "spec.parameters[].name", "spec.parameters[].allowUpdate",
        "spec.parameters[].required", "spec.parameters[].default.template", "spec.parameters[].default.value",
        "spec.parameters[].validation.checks[].name", "spec.parameters[].validation.checks[].check",
        "spec.parameters[].validation.openAPIV3Schema", "spec.resourceClaimAnnotations",
        "spec.resourceClaimLabels", "spec.resourceName", "spec.resourceRequiresClaim", "spec.statusSummaryTemplate",
        "spec.template.definition", "spec.template.enable", "spec.template.style", "spec.updateFilters[].pathMatch",
        "spec.updateFilters[].allowedOps[]", "spec.validation.checks[].name", "spec.validation.checks[].check",
        "spec.validation.openAPIV3Schema", "spec.vars",
    ],
    "ResourceClaim": [
        "spec.provider.name", "spec.provider.parameterValues", "spec.resources[].name",
        "spec.resources[].provider.name", "spec.resources[].provider.apiVersion", "spec.resources[].provider.kind",
        "spec.resources[].provider.namespace", "spec.resources[].template", "spec.autoDelete.when",
        "spec.autoDetach.when", "spec.disableCreation", "spec.lifespan.start", "spec.lifespan.end",
        "status.approval.state", "status.approval.message", "status.healthy", "status.ready",
        "status.lifespan.start", "status.lifespan.end", "status.lifespan.firstReady", "status.lifespan.maximum",
        "status.lifespan.relativeMaximum", "status.provider.name", "status.provider.parameterValues",
        "status.provider.validationErrors[]", "status.resourceHandle.apiVersion", "status.resourceHandle.kind",
        "status.resourceHandle.name", "status.resourceHandle.namespace", "status.resourceHandle.detached",
        "status.resources[].name", "status.resources[].provider.name", "status.resources[].provider.namespace",
        "status.resources[].reference.apiVersion", "status.resources[].reference.kind",
        "status.resources[].reference.name", "status.resources[].reference.namespace", "status.resources[].state",
        "status.resources[].healthy", "status.resources[].ready", "status.resources[].validationError",
        "status.resources[].waitingFor", "status.summary", "status.conditions[].type",
    ],
    "ResourceHandle": [
        "spec.lifespan.default", "spec.lifespan.maximum", "spec.lifespan.relativeMaximum", "spec.lifespan.end",
        "spec.preferenceScore", "spec.provider.name", "spec.provider.parameterValues", "spec.resourceAnnotations",
        "spec.resourceLabels", "spec.resourceClaim.apiVersion", "spec.resourceClaim.kind",
        "spec.resourceClaim.name", "spec.resourceClaim.namespace", "spec.resourcePool.apiVersion",
        "spec.resourcePool.kind", "spec.resourcePool.name", "spec.resourcePool.namespace",
        "spec.resources[].provider.name", "spec.resources[].name", "spec.resources[].template",
        "spec.resources[].reference.name", "spec.standby", "spec.vars", "status.healthy", "status.ready",
        "status.resources[].name",
        "status.resources[].reference.name", "status.resources[].healthy", "status.resources[].ready",
        "status.resources[].waitingFor", "status.summary", "status.conditions[].status",
    ],
    "ResourcePool": [
        "spec.minAvailable", "spec.maxUnready", "spec.deleteUnhealthyResourceHandles", "spec.lifespan.default",
        "spec.lifespan.maximum", "spec.lifespan.relativeMaximum", "spec.lifespan.unclaimed", "spec.preferenceScore",
        "spec.provider.name", "spec.provider.parameterValues", "spec.resources[].provider.name",
        "spec.resources[].name", "spec.resources[].template", "spec.resourceAnnotations", "spec.resourceLabels",
        "spec.vars", "status.resourceHandleCount.available", "status.resourceHandleCount.ready",
        "status.resourceHandles[].name", "status.resourceHandles[].healthy", "status.resourceHandles[].ready",
        "status.conditions[].reason",
    ],
    "ResourcePoolScaling": [
        "spec.resourcePool.name", "spec.count", "spec.at", "status.count", "status.state",
        "status.conditions[].lastTransitionTime",
    ],
    "ResourceWatch": ["spec.apiVersion", "spec.kind", "spec.namespace", "spec.refreshInterval", "status"],
}

#: kind -> the spec's printer columns (name, jsonPath) in order; each CRD must start with exactly these
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "ResourceProvider": [("Api Version", ".spec.override.apiVersion"), ("Kind", ".spec.override.kind")],
    # a claim's Healthy and Ready read its conditions, not status.healthy/ready: those are absent while unknown
    # (no handle yet, a refused spec), where the conditions say Unknown and False
    "ResourceClaim": [("Handle", ".status.resourceHandle.name"), ("Provider", ".spec.provider.name"),
                      ("Healthy", '.status.conditions[?(@.type=="Healthy")].status'),
                      ("Ready", '.status.conditions[?(@.type=="Ready")].status')],
    "ResourceHandle": [("Provider", ".spec.provider.name"), ("Pool", ".spec.resourcePool.name"),
                       ("Healthy", ".status.healthy"), ("Ready", ".status.ready"),
                       ("Claim Namespace", ".spec.resourceClaim.namespace"),
                       ("Claim Name", ".spec.resourceClaim.name")],
    "ResourcePool": [("ResourceProvider", ".spec.provider.name"), ("Min", ".spec.minAvailable"),
                     ("Available", ".status.resourceHandleCount.available"),
                     ("Ready", ".status.resourceHandleCount.ready")],
    "ResourcePoolScaling": [("Pool", ".spec.resourcePool.name"), ("At", ".spec.at"), ("Count", ".spec.count"),
                            ("Created", ".status.count"), ("State", ".status.state")],
    "ResourceWatch": [("Watch Namespace", ".spec.namespace"), ("Api Version", ".spec.apiVersion"),
                      ("Kind", ".spec.kind")],
}

SYNCED_COLUMN = ("Synced", '.status.conditions[?(@.type=="Synced")].reason', "string")
#: kind -> default columns beyond the spec's, before Age: a failing object shows its error reason
EXTRA_DEFAULT_COLUMNS: dict[str, list[tuple[str, str, str]]] = {
    "ResourceClaim": [SYNCED_COLUMN],
    "ResourceHandle": [SYNCED_COLUMN, ("State", ".status.state", "string")],
    "ResourcePool": [SYNCED_COLUMN, ("Running", ".status.resourceHandleCount.running", "integer"),
                     ("Standby", ".status.resourceHandleCount.standby", "integer")],
    "ResourceProvider": [("Valid", '.status.conditions[?(@.type=="Valid")].status', "string")],
}
#: kind -> default columns after Age: a long text ends the line
TRAILING_DEFAULT_COLUMNS: dict[str, list[tuple[str, str, str]]] = {
    "ResourceClaim": [("Message", '.status.conditions[?(@.status=="False")].message', "string")],
}

API_VERSION = f"{DEFAULT_DOMAIN}/v1"
FULL_REF = {"apiVersion": API_VERSION, "kind": "ResourceProvider", "name": "test", "namespace": "poolboy"}

#: one valid object of each kind, exercising most typed fields
VALID: dict[str, dict[str, Any]] = {
    "ResourceProvider": {
        "apiVersion": API_VERSION, "kind": "ResourceProvider", "metadata": {"name": "test.provider-1"},
        "spec": {
            "approval": {"required": True, "pendingMessage": "Wait."},
            "default": {"spec": {"x": 1}}, "disableCreation": False, "healthCheck": "true",
            "lifespan": {"default": "1d", "maximum": "{{ '7d' }}", "relativeMaximum": "3d", "unclaimed": "12h"},
            "linkedResourceProviders": [{"name": "base", "parameterValues": {"a": "{{ b }}"}, "resourceName": "x",
                                         "templateVars": [{"name": "v", "from": "/spec/v"}], "waitFor": "true",
                                         "when": "true"}],
            "match": {"apiVersion": "v1", "kind": "ConfigMap"}, "matchIgnore": ["/data/.*"],
            "override": {"metadata": {"namespace": "ns"}},
            "parameters": [{"name": "p", "allowUpdate": True, "required": True, "default": {"value": [1, "a"]},
                            "validation": {"checks": [{"name": "c", "check": "value > 0"}],
                                           "openAPIV3Schema": {"type": "integer", "default": 1}}}],
            "resourceClaimLabels": {"a": "b"}, "resourceName": "r", "resourceRequiresClaim": True,
            "statusSummaryTemplate": {"k": "{{ v }}"},
            "template": {"definition": {"apiVersion": "v1"}, "enable": True, "style": "jinja2"},
            "updateFilters": [{"pathMatch": "/spec/.*", "allowedOps": ["add", "replace"]}],
            "validation": {"checks": [{"name": "c", "check": "true"}], "openAPIV3Schema": {"type": "object"},
                           "customValidation": {"ignored": True}},
            "vars": {"v": 1}, "someFutureKey": "ignored",
        },
    },
    "ResourceClaim": {
        "apiVersion": API_VERSION, "kind": "ResourceClaim", "metadata": {"name": "claim-1"},
        "spec": {"resources": [{"name": "r", "provider": {"name": "test"}, "template": {"spec": {"x": 1}}}],
                 "autoDelete": {"when": "false"}, "autoDetach": {"when": "false"}, "disableCreation": True,
                 "lifespan": {"start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"}},
        "status": {
            "approval": {"state": "approved", "message": "ok"}, "healthy": True, "ready": False,
            "lifespan": {"start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z",
                         "firstReady": "2024-01-01T00:05:00Z", "maximum": "36h", "relativeMaximum": "7d"},
            "provider": {"name": "test", "parameterValues": {"p": 1}, "validationErrors": ["bad"]},
            "resourceHandle": {"apiVersion": API_VERSION, "kind": "ResourceHandle", "name": "guid-abcde",
                               "namespace": "poolboy", "detached": False},
            "resources": [{"name": "r", "provider": FULL_REF,
                           "reference": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "n"},
                           "state": {"metadata": {"name": "cm"}}, "healthy": True, "ready": True,
                           "validationError": "x", "waitingFor": "Linked ResourceProvider"}],
            "summary": {"url": "https://example.com"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                            "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}],
            "kopf": {"upstream": "bookkeeping"},
        },
    },
    "ResourceHandle": {
        "apiVersion": API_VERSION, "kind": "ResourceHandle", "metadata": {"name": "guid-ab1cd"},
        "spec": {"lifespan": {"default": "1d", "maximum": "7d", "relativeMaximum": "3d",
                              "end": "2024-01-02T00:00:00Z"},
                 "preferenceScore": 1.5, "provider": {"name": "test", "parameterValues": {}},
                 "resourceAnnotations": {"a": "b"}, "resourceLabels": {"l": "v"},
                 "resourceClaim": {"apiVersion": API_VERSION, "kind": "ResourceClaim", "name": "c", "namespace": "n"},
                 "resourcePool": {"apiVersion": API_VERSION, "kind": "ResourcePool", "name": "p",
                                  "namespace": "poolboy"},
                 "resources": [{"provider": FULL_REF, "name": "r", "template": {"a": 1},
                                "reference": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}}],
                 "vars": {"x": "y"}},
        "status": {"healthy": True, "ready": True,
                   "resources": [{"name": "r", "reference": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"},
                                  "healthy": True, "ready": True, "waitingFor": "ResourceClaim"}],
                   "summary": {}, "diffBase": "{}"},
    },
    "ResourcePool": {
        "apiVersion": API_VERSION, "kind": "ResourcePool", "metadata": {"name": "pool"},
        "spec": {"minAvailable": 2, "maxUnready": 1, "deleteUnhealthyResourceHandles": True,
                 "lifespan": {"default": "1d", "unclaimed": "7d"}, "preferenceScore": 3,
                 "provider": {"name": "test", "parameterValues": {"p": 1}},
                 "resourceAnnotations": {"a": "b"}, "resourceLabels": {"l": "v"}, "vars": {}},
        "status": {"resourceHandleCount": {"available": 2, "ready": 1},
                   "resourceHandles": [{"name": "guid-aaaaa", "healthy": True, "ready": True},
                                       {"name": "guid-bbbbb"}]},
    },
    "ResourcePoolScaling": {
        "apiVersion": API_VERSION, "kind": "ResourcePoolScaling", "metadata": {"name": "scale-1"},
        "spec": {"resourcePool": {"name": "pool"}, "count": 5, "at": "2024-01-01T00:00:00Z"},
        "status": {"count": 2, "state": "scaling"},
    },
    "ResourceWatch": {
        "apiVersion": API_VERSION, "kind": "ResourceWatch", "metadata": {"name": "cluster-abc"},
        "spec": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "n", "refreshInterval": "5m"},
        "status": {"anything": [1, 2]},
    },
}


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``document`` with the dotted ``path`` (``[0]`` for list items) set to ``value``."""
    result = copy.deepcopy(document)
    node: Any = result
    steps = path.replace("[", ".[").split(".")
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        key: Any = int(step[1:-1]) if step.startswith("[") else step
        if following is None:
            node[key] = value
        else:
            node = node[key]
    return result


#: kind -> (path, value) that the schema must reject
INVALID: list[tuple[str, str, Any]] = [
    ("ResourceClaim", "status.lifespan.maximum", "1d12h"),
    ("ResourceClaim", "status.lifespan.relativeMaximum", "1 day"),
    ("ResourceClaim", "status.approval.state", "maybe"),
    ("ResourceClaim", "status.approval", {"message": "no state"}),
    ("ResourceClaim", "status.resources[0].waitingFor", "Something"),
    ("ResourceClaim", "status.healthy", None),
    ("ResourceClaim", "status.healthy", "yes"),
    ("ResourceClaim", "status.lifespan.firstReady", "yesterday"),
    ("ResourceClaim", "status.conditions[0].status", "Maybe"),
    ("ResourceClaim", "spec.resources[0].provider", {"kind": "ResourceProvider"}),
    ("ResourceClaim", "spec.provider", {"parameterValues": {}}),
    ("ResourceClaim", "spec.lifespan.end", "tomorrow"),
    ("ResourceClaim", "metadata.name", "-bad"),
    ("ResourceClaim", "metadata.name", "a" * 64),
    ("ResourceClaim", "spec", None),
    ("ResourceHandle", "metadata.name", "handle-1"),
    ("ResourceHandle", "spec.resourceClaim", {"name": "c", "namespace": "n"}),
    ("ResourceHandle", "spec.preferenceScore", "high"),
    ("ResourceHandle", "spec.resources[0]", {"name": "no-provider"}),
    ("ResourceHandle", "status.resources[0].ready", None),
    ("ResourcePool", "spec.minAvailable", -1),
    ("ResourcePool", "spec.maxUnready", 1.5),
    ("ResourcePool", "spec.lifespan.unclaimed", "1d12h"),
    ("ResourcePool", "status.resourceHandleCount.available", None),
    ("ResourcePool", "status.resourceHandleCount.ready", -1),
    ("ResourcePool", "status.resourceHandles[0].healthy", None),
    ("ResourcePool", "spec.resourceLabels", {"l": 1}),
    ("ResourcePoolScaling", "spec.count", -1),
    ("ResourcePoolScaling", "spec.resourcePool", {}),
    ("ResourcePoolScaling", "status.state", "running"),
    ("ResourcePoolScaling", "spec.at", "now"),
    ("ResourceProvider", "spec.template.style", "mustache"),
    ("ResourceProvider", "spec.updateFilters[0].allowedOps", ["move"]),
    ("ResourceProvider", "spec.updateFilters[0]", {"allowedOps": ["add"]}),
    ("ResourceProvider", "spec.lifespan.unclaimed", "1 day"),
    ("ResourceProvider", "spec.parameters[0]", {"required": True}),
    ("ResourceProvider", "spec.linkedResourceProviders[0]", {"when": "true"}),
    ("ResourceProvider", "spec.approval.required", "yes"),
    ("ResourceWatch", "spec.refreshInterval", "5h"),
    ("ResourceWatch", "spec", {"apiVersion": "v1"}),
]


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    return {crd["spec"]["names"]["kind"]: crd for crd in load_crds()}


def version_of(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    return version


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    return version_of(crd)["schema"]["openAPIV3Schema"]


def validator(crd: dict[str, Any]) -> jsonschema.Draft4Validator:
    """OpenAPI v3 schemas are close to JSON Schema draft 4; formats are checked as the apiserver does."""
    return jsonschema.Draft4Validator(schema_of(crd), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def resolve(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The schema node at a dotted path such as ``spec.resources[].template``."""
    node = schema
    for step in path.split("."):
        name, _, rest = step.partition("[]")
        assert node.get("type") == "object" and name in node.get("properties", {}), f"{path}: no '{name}'"
        node = node["properties"][name]
        if step.endswith("[]"):
            assert node.get("type") == "array", f"{path}: '{name}' is not an array"
            node = node["items"]
        assert not rest.strip("[]"), path
    return node


def structural_errors(node: Any, path: str = "") -> list[str]:
    """Violations of the apiserver's structural-schema rules (a subset: the rules these CRDs could break)."""
    if not isinstance(node, dict):
        return [f"{path}: not a mapping"]
    errors = []
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if "type" not in node and not preserve and not node.get("x-kubernetes-int-or-string"):
        errors.append(f"{path}: no type")
    for forbidden in ("$ref", "definitions", "dependencies", "patternProperties", "allOf", "anyOf", "oneOf",
                      "not", "nullable"):
        if forbidden in node:
            errors.append(f"{path}: {forbidden} not used by these schemas")
    if node.get("uniqueItems"):
        errors.append(f"{path}: uniqueItems is forbidden")
    if "additionalProperties" in node:
        if "properties" in node or preserve:
            errors.append(f"{path}: additionalProperties with properties/preserve-unknown-fields")
        if node["additionalProperties"] is False:
            errors.append(f"{path}: additionalProperties false is forbidden")
    if node.get("type") == "array":
        if "items" not in node:
            errors.append(f"{path}: array without items")
        else:
            errors += structural_errors(node["items"], path + "[]")
    if node.get("x-kubernetes-list-type") == "map":
        keys = node.get("x-kubernetes-list-map-keys") or []
        required = set(node.get("items", {}).get("required", []))
        if not keys or not set(keys) <= required:
            errors.append(f"{path}: list-map keys must be required")
    for name, child in node.get("properties", {}).items():
        if node.get("type") != "object":
            errors.append(f"{path}: properties on a non-object")
        errors += structural_errors(child, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        errors += structural_errors(node["additionalProperties"], path + "{}")
    for name in node.get("required", []):
        if name not in node.get("properties", {}):
            errors.append(f"{path}: required '{name}' is not a declared property")
    return errors


def test_one_file_per_kind_and_each_parses() -> None:
    files = sorted(SOURCE_CRDS_DIR.glob("*.yaml"))
    assert len(files) == 6
    kinds = []
    for path in files:
        crd = yaml.safe_load(path.read_text())
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert crd["kind"] == "CustomResourceDefinition"
        assert path.name == crd["spec"]["names"]["plural"] + ".yaml"
        kinds.append(crd["spec"]["names"]["kind"])
    assert sorted(kinds) == sorted(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_group_version_scope_and_names(crds: dict[str, dict[str, Any]], kind: str) -> None:
    crd = crds[kind]
    names = crd["spec"]["names"]
    assert crd["spec"]["group"] == DEFAULT_DOMAIN
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["metadata"]["name"] == f"{names['plural']}.{DEFAULT_DOMAIN}"
    assert names["singular"] == kind.lower()
    assert names["listKind"] == kind + "List"
    assert "poolboy" in names["categories"]
    version = version_of(crd)
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_structural(crds: dict[str, dict[str, Any]], kind: str) -> None:
    schema = schema_of(crds[kind])
    assert structural_errors(schema) == []
    assert schema["required"] == ["apiVersion", "kind", "metadata", "spec"]
    assert set(schema["properties"]["metadata"]) <= {"type", "properties"}
    assert set(schema["properties"]["metadata"].get("properties", {})) <= {"name", "generateName"}


def test_structural_check_catches_violations() -> None:
    """The checker itself must be able to fail, or the test above proves nothing."""
    assert structural_errors({"properties": {"a": {"type": "string"}}})
    assert structural_errors({"type": "object", "properties": {"a": {}}})
    assert structural_errors({"type": "array"})
    assert structural_errors({"type": "object", "properties": {"a": {"type": "string"}},
                              "additionalProperties": {"type": "string"}})
    assert structural_errors({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["t"],
                              "items": {"type": "object", "properties": {"t": {"type": "string"}}}})


@pytest.mark.parametrize("kind", KINDS)
def test_every_spec_field_is_declared(crds: dict[str, dict[str, Any]], kind: str) -> None:
    schema = schema_of(crds[kind])
    for path in FIELDS[kind]:
        resolve(schema, path)


@pytest.mark.parametrize("kind", KINDS)
def test_subresources_and_status(crds: dict[str, dict[str, Any]], kind: str) -> None:
    version = version_of(crds[kind])
    assert ("status" in version.get("subresources", {})) == (kind in WITH_STATUS_SUBRESOURCE)
    status = schema_of(crds[kind])["properties"]["status"]
    assert status["type"] == "object"
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    if kind in WITH_STATUS_SUBRESOURCE:
        conditions = status["properties"]["conditions"]
        assert conditions["x-kubernetes-list-type"] == "map"
        assert conditions["x-kubernetes-list-map-keys"] == ["type"]
        item = conditions["items"]["properties"]
        assert item["status"]["enum"] == ["True", "False", "Unknown"]
        assert item["lastTransitionTime"]["format"] == "date-time"
        assert item["observedGeneration"]["type"] == "integer"


def test_free_form_parts_preserve_unknown_fields(crds: dict[str, dict[str, Any]]) -> None:
    provider = schema_of(crds["ResourceProvider"])
    assert resolve(provider, "spec")["x-kubernetes-preserve-unknown-fields"] is True
    for path in ("spec.default", "spec.override", "spec.match", "spec.vars", "spec.statusSummaryTemplate",
                 "spec.template.definition", "spec.validation.openAPIV3Schema",
                 "spec.linkedResourceProviders[].parameterValues", "spec.parameters[].validation.openAPIV3Schema"):
        node = resolve(provider, path)
        assert node == {**node, "type": "object", "x-kubernetes-preserve-unknown-fields": True}, path
    assert "type" not in resolve(provider, "spec.parameters[].default.value")
    claim = schema_of(crds["ResourceClaim"])
    for path in ("spec.resources[].template", "spec.provider.parameterValues", "status.resources[].state",
                 "status.summary", "status.provider.parameterValues"):
        assert resolve(claim, path)["x-kubernetes-preserve-unknown-fields"] is True, path


#: default columns beyond the spec's, before Age (beyond upstream: a provider's own validity at a glance)
@pytest.mark.parametrize("kind", KINDS)
def test_printer_columns_follow_the_spec(crds: dict[str, dict[str, Any]], kind: str) -> None:
    columns = version_of(crds[kind])["additionalPrinterColumns"]
    expected = COLUMNS[kind]
    assert [(c["name"], c["jsonPath"]) for c in columns[: len(expected)]] == expected
    default_columns = [c for c in columns if not c.get("priority")]
    assert [(c["name"], c["jsonPath"], c["type"]) for c in default_columns[len(expected):]] == \
        [*EXTRA_DEFAULT_COLUMNS.get(kind, []), ("Age", ".metadata.creationTimestamp", "date"),
         *TRAILING_DEFAULT_COLUMNS.get(kind, [])]
    for column in columns:
        assert column["type"] in {"string", "integer", "number", "boolean", "date"}


def test_provider_columns_read_the_override_as_a_real_api_server_does(crds: dict[str, dict[str, Any]]) -> None:
    """Upstream providers (and examples/) name the resource in ``override``. A printer column is one JSONPath the
    API server evaluates as written: ``['override.kind']`` would be a key named so (as in
    ``.metadata.annotations['example.com/x']``), not a fallback, so the columns read ``override`` alone."""
    columns = {c["name"]: c["jsonPath"] for c in version_of(crds["ResourceProvider"])["additionalPrinterColumns"]}
    provider = {"spec": {"override": {"apiVersion": "v1", "kind": "ConfigMap"},
                         "template": {"definition": {"kind": "Secret"}}}}
    assert (jsonpath(provider, columns["Api Version"]), jsonpath(provider, columns["Kind"])) == ("v1", "ConfigMap")
    assert jsonpath(provider, ".spec['override.kind']") is None
    assert jsonpath({"a": {"x.y": 1, "b": 2}}, ".a['x.y','b']") == 1


def test_a_typed_column_shows_only_values_of_its_type_as_the_api_server_does() -> None:
    """devcluster prints as kube-apiserver's table convertor: a ``boolean`` column over a condition's ``"False"``
    is blank there, so the claim's condition columns are ``string``."""
    assert [typed_cell("boolean", v) for v in (True, "False", None)] == [True, None, None]
    assert [typed_cell("integer", v) for v in (2, 2.0, "2", True)] == [2, 2, None, None]
    assert typed_cell("number", 1) == 1.0


def test_the_claim_is_explained_by_its_first_false_condition(crds: dict[str, dict[str, Any]]) -> None:
    """REASON and MESSAGE read the first False condition; the claim keeps them in the order Synced, Bound,
    Healthy, Ready, so a refused spec explains the claim before the readiness it keeps from changing."""
    columns = {c["name"]: c["jsonPath"] for c in version_of(crds["ResourceClaim"])["additionalPrinterColumns"]}
    refused = {"status": {"conditions": [
        {"type": "Synced", "status": "False", "reason": "ProviderNotFound", "message": "ResourceProvider helo not "
         "found; did you mean hello?"},
        {"type": "Healthy", "status": "Unknown", "reason": "NotBound", "message": "No ResourceHandle is bound."},
        {"type": "Ready", "status": "False", "reason": "NotBound", "message": "No ResourceHandle is bound."}]}}
    assert [jsonpath(refused, columns[name]) for name in ("Healthy", "Ready", "Synced", "Reason", "Message")] == \
        ["Unknown", "False", "ProviderNotFound", "ProviderNotFound", "ResourceProvider helo not found; did you mean "
         "hello?"]
    ready = {"status": {"conditions": [{"type": t, "status": "True", "reason": t, "message": ""}
                                       for t in ("Synced", "Bound", "Healthy", "Ready")]}}
    assert (jsonpath(ready, columns["Ready"]), jsonpath(ready, columns["Message"])) == ("True", None)


def schema_properties(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property of a structural schema with its path (``[]`` steps into array items)."""
    for name, prop in (schema.get("properties") or {}).items():
        here = f"{path}.{name}" if path else name
        yield here, prop
        yield from schema_properties(prop, here)
    if isinstance(schema.get("items"), dict):
        yield from schema_properties(schema["items"], path + "[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from schema_properties(schema["additionalProperties"], path + "{}")


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_is_described_for_kubectl_explain(crds: dict[str, dict[str, Any]], kind: str) -> None:
    """``metadata`` is the exception: a structural schema may only restrict its name, and the API server
    documents it as ObjectMeta in the OpenAPI that ``kubectl explain`` reads."""
    undescribed = [path for path, prop in schema_properties(schema_of(crds[kind]))
                   if not str(prop.get("description") or "").strip()
                   and path != "metadata" and not path.startswith("metadata.")]
    assert not undescribed, f"{kind}: `kubectl explain` would say <no description> for {undescribed}"


def test_short_names_are_unique_and_shadow_no_builtin(crds: dict[str, dict[str, Any]]) -> None:
    seen: list[str] = []
    for crd in crds.values():
        names = crd["spec"]["names"]
        assert names["shortNames"], names["kind"]
        seen += names["shortNames"]
        assert names["plural"] not in BUILTIN_SHORT_NAMES
    assert len(seen) == len(set(seen))
    assert not set(seen) & BUILTIN_SHORT_NAMES


def test_resourcewatch_selectable_fields(crds: dict[str, dict[str, Any]]) -> None:
    version = version_of(crds["ResourceWatch"])
    assert [f["jsonPath"] for f in version["selectableFields"]] == [".spec.namespace", ".spec.apiVersion",
                                                                   ".spec.kind"]
    for field in version["selectableFields"]:
        assert resolve(schema_of(crds["ResourceWatch"]), field["jsonPath"][1:])["type"] == "string"


@pytest.mark.parametrize("kind", KINDS)
def test_valid_sample_is_accepted(crds: dict[str, dict[str, Any]], kind: str) -> None:
    validator(crds[kind]).validate(VALID[kind])


@pytest.mark.parametrize(("kind", "path", "value"), INVALID, ids=[f"{k}:{p}={v!r}"[:80] for k, p, v in INVALID])
def test_invalid_sample_is_rejected(crds: dict[str, dict[str, Any]], kind: str, path: str, value: Any) -> None:
    assert not validator(crds[kind]).is_valid(_set(VALID[kind], path, value))


@pytest.mark.parametrize("value", ["36h", "1d", "90m", "30s"])
def test_single_unit_lifespan_maximum_accepted(crds: dict[str, dict[str, Any]], value: str) -> None:
    claim = _set(VALID["ResourceClaim"], "status.lifespan.maximum", value)
    validator(crds["ResourceClaim"]).validate(claim)


def test_upstream_migrated_status_keys_and_provider_spec_keys_are_accepted(crds: dict[str, dict[str, Any]]) -> None:
    claim = _set(VALID["ResourceClaim"], "status.diffBase", '{"spec": {}}')
    validator(crds["ResourceClaim"]).validate(claim)
    provider = _set(VALID["ResourceProvider"], "spec.validation", {"openApiV3Schema": {"type": "object"}})
    validator(crds["ResourceProvider"]).validate(provider)


def test_load_crds_renames_group_and_names() -> None:
    crds = load_crds("example.com")
    assert len(crds) == 6
    for crd in crds:
        assert crd["spec"]["group"] == "example.com"
        assert crd["metadata"]["name"] == crd["spec"]["names"]["plural"] + ".example.com"
        assert DEFAULT_DOMAIN not in yaml.safe_dump(crd)
    # the default-domain copies are untouched
    assert {c["spec"]["group"] for c in load_crds()} == {DEFAULT_DOMAIN}


def test_write_crds_writes_one_file_per_kind(tmp_path: Path) -> None:
    written = write_crds("other.example.org", tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in SOURCE_CRDS_DIR.glob("*.yaml"))
    assert load_crds("other.example.org", tmp_path) == load_crds("other.example.org")


def test_crds_dir_can_be_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POOLBOY_CRDS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError):
        load_crds()



@pytest.mark.parametrize("domain", [DEFAULT_DOMAIN, "example.com"])
def test_pool_scale_subresource_maps_min_available_for_every_domain(domain: str) -> None:
    pool = next(c for c in load_crds(domain) if c["spec"]["names"]["kind"] == "ResourcePool")
    assert version_of(pool)["subresources"]["scale"] == {
        "specReplicasPath": ".spec.minAvailable", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}
    schema = schema_of(pool)["properties"]
    assert schema["spec"]["properties"]["minAvailable"]["default"] == 0  # so GET /scale never finds it absent
    assert schema["status"]["properties"]["replicas"]["type"] == "integer"
    assert schema["status"]["properties"]["selector"]["type"] == "string"
# The Helm chart itself is checked with the real helm binary in tests/deploy/.

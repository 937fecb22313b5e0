"""Resource kinds the server knows: built-in core kinds plus CustomResourceDefinitions added at runtime.

Each served (group, version, plural) maps to a :class:`ResourceType`. All versions of one CRD share one storage
key ``(group, plural)``; objects are stored once and re-labelled with the requested ``apiVersion`` on the way out
(no conversion webhooks — identical schemas across versions are what tests use).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from devcluster.conversion import event_from_core, event_to_core

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass
class ResourceType:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    has_status: bool = False
    schema: dict[str, Any] | None = None
    builtin: bool = True
    printer_columns: list[dict[str, Any]] = field(default_factory=list)
    returns_object_on_delete: bool = True
    storage: tuple[str, str] | None = None  # another kind's storage (events.k8s.io Events live as core Events)
    to_storage: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    from_storage: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    field_labels: frozenset[str] = frozenset()
    scale: dict[str, Any] | None = None  # a CRD version's ``subresources.scale`` (the replicas/selector paths)

    @property
    def subresources(self) -> tuple[str, ...]:
        return (("status",) if self.has_status else ()) + (("scale",) if self.scale is not None else ())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def store_key(self) -> tuple[str, str]:
        return self.storage or (self.group, self.plural)

    def supports_field(self, path: str) -> bool:
        return path in ("metadata.name", "metadata.namespace") or path in self.field_labels

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def label(self) -> str:
        """``configmaps`` / ``widgets.example.com`` for counters and messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def discovery_entries(self) -> list[dict[str, Any]]:
        entry: dict[str, Any] = {
            "name": self.plural, "singularName": self.singular, "namespaced": self.namespaced,
            "kind": self.kind, "verbs": ALL_VERBS,
        }
        if self.short_names:
            entry["shortNames"] = self.short_names
        if self.categories:
            entry["categories"] = self.categories
        entries = [entry]
        if self.has_status:
            entries.append({"name": f"{self.plural}/status", "singularName": "", "namespaced": self.namespaced,
                            "kind": self.kind, "verbs": ["get", "patch", "update"]})
        if self.scale is not None:  # kubectl's scale client resolves the Scale's group/version from this entry
            entries.append({"name": f"{self.plural}/scale", "singularName": "", "namespaced": self.namespaced,
                            "group": "autoscaling", "version": "v1", "kind": "Scale",
                            "verbs": ["get", "patch", "update"]})
        return entries


EVENT_FIELDS = frozenset({
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
    "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
    "reportingComponent", "source", "type",
})
BUILTINS = [
    ResourceType("", "v1", "namespaces", "namespace", "Namespace", False, ["ns"], has_status=True,
                 field_labels=frozenset({"status.phase"})),
    ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", True, ["cm"], returns_object_on_delete=False),
    ResourceType("", "v1", "secrets", "secret", "Secret", True, returns_object_on_delete=False,
                 field_labels=frozenset({"type"})),
    ResourceType("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True, ["sa"],
                 returns_object_on_delete=False),
    ResourceType("", "v1", "events", "event", "Event", True, ["ev"], returns_object_on_delete=False,
                 field_labels=EVENT_FIELDS),
    ResourceType("events.k8s.io", "v1", "events", "event", "Event", True, ["ev"], returns_object_on_delete=False,
                 storage=("", "events"), to_storage=event_to_core, from_storage=event_from_core,
                 field_labels=EVENT_FIELDS),
    ResourceType("coordination.k8s.io", "v1", "leases", "lease", "Lease", True, returns_object_on_delete=False),
    # RBAC objects are stored and served (so a chart's RBAC can be applied), never enforced.
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", True, returns_object_on_delete=False),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", True,
                 returns_object_on_delete=False),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", False,
                 returns_object_on_delete=False),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
                 "ClusterRoleBinding", False, returns_object_on_delete=False),
    ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
                 "CustomResourceDefinition", False, ["crd", "crds"], ["api-extensions"], has_status=True),
]


class Registry:
    """Lookup of served kinds by (group, version, plural) and discovery documents."""

    def __init__(self) -> None:
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        self.crd_types: dict[str, list[ResourceType]] = {}
        for rtype in BUILTINS:
            self.add(rtype)

    def add(self, rtype: ResourceType) -> None:
        self.types[(rtype.group, rtype.version, rtype.plural)] = rtype

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.types.get((group, version, plural))

    def by_store_key(self, key: tuple[str, str]) -> ResourceType | None:
        for rtype in self.types.values():
            if rtype.store_key == key and rtype.storage is None:
                return rtype
        return None

    # --- CRDs ------------------------------------------------------------------------------------------------

    def install_crd(self, crd: dict[str, Any]) -> None:
        """(Re)register every served version of ``crd``; replaces an earlier definition of the same CRD."""
        self.remove_crd(crd["metadata"]["name"])
        spec = crd["spec"]
        names = spec["names"]
        types = []
        for version in spec.get("versions", []):
            if not version.get("served", True):
                continue
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            subresources = version.get("subresources") or {}
            rtype = ResourceType(
                group=spec["group"], version=version["name"], plural=names["plural"],
                singular=names.get("singular") or names["kind"].lower(), kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=list(names.get("shortNames") or []), categories=list(names.get("categories") or []),
                has_status="status" in subresources, schema=schema, builtin=False, scale=subresources.get("scale"),
                printer_columns=list(version.get("additionalPrinterColumns") or []),
                field_labels=frozenset(f["jsonPath"].lstrip(".") for f in version.get("selectableFields") or []),
            )
            types.append(rtype)
            self.add(rtype)
        self.crd_types[crd["metadata"]["name"]] = types

    def remove_crd(self, name: str) -> list[ResourceType]:
        removed = self.crd_types.pop(name, [])
        for rtype in removed:
            self.types.pop((rtype.group, rtype.version, rtype.plural), None)
        return removed

    def storage_version(self, crd: dict[str, Any]) -> str:
        versions = crd["spec"].get("versions", [])
        for version in versions:
            if version.get("storage"):
                return version["name"]
        return versions[0]["name"] if versions else "v1"

    # --- discovery -------------------------------------------------------------------------------------------

    def group_versions(self) -> dict[str, list[str]]:
        """Non-core groups → served versions, preferred (first registered) first."""
        groups: dict[str, list[str]] = {}
        for rtype in self.types.values():
            if rtype.group:
                versions = groups.setdefault(rtype.group, [])
                if rtype.version not in versions:
                    versions.append(rtype.version)
        return groups

    def api_group_list(self) -> dict[str, Any]:
        groups = []
        for name, versions in sorted(self.group_versions().items()):
            entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
            groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, group: str) -> dict[str, Any] | None:
        versions = self.group_versions().get(group)
        if not versions:
            return None
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
                "preferredVersion": entries[0]}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        resources: list[dict[str, Any]] = []
        for rtype in self.types.values():
            if rtype.group == group and rtype.version == version:
                resources.extend(rtype.discovery_entries())
        if not resources:
            return None
        group_version = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": resources}

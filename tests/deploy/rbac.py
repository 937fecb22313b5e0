"""A small RBAC evaluator: which (verb, group, resource, namespace) requests the rendered chart allows to which
ServiceAccount, and the requests a process made, read from its API audit (stack/api_audit.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Request:
    """One API request in RBAC terms. ``namespace`` is None for a cluster-wide (or cluster-scoped) request."""

    verb: str
    group: str
    resource: str  # with "/subresource"
    namespace: str | None

    def __str__(self) -> str:
        where = f"ns={self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.verb} {self.resource}.{self.group or 'core'} ({where})"


def request_from_call(method: str, path: str, watch: bool) -> Request | None:
    """``GET /apis/g/v/namespaces/ns/things/name/status`` -> Request; None for discovery and other non-resource
    URLs (allowed to every authenticated identity by the built-in ``system:discovery`` role)."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)
    if verb is None:
        verb = "watch" if watch else ("get" if name else "list")
    if resource == "namespaces" and namespace is None and name is not None and sub is None:
        return Request(verb, group, resource, None)
    return Request(verb, group, resource + (f"/{sub}" if sub else ""), namespace)


def audited_requests(directory: Path) -> dict[str, set[Request]]:
    """command (watcher, worker, beat, flower) -> the distinct requests its processes made."""
    found: dict[str, set[Request]] = {}
    for path in sorted(directory.glob("*.jsonl")):
        command = path.name.rsplit("-", 1)[0]
        for line in path.read_text().splitlines():
            call = json.loads(line)
            request = request_from_call(call["method"], call["path"], call["watch"])
            if request is not None:
                found.setdefault(command, set()).add(request)
    return found


@dataclass(frozen=True)
class Grant:
    """One (verb, group, resource) of a rule, where it applies (None = every namespace) and which object gave it."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    source: str

    def allows(self, request: Request) -> bool:
        return (self.verb == request.verb and self.group == request.group and self.resource == request.resource
                and (self.namespace is None or self.namespace == request.namespace))


def grants_for(manifests: Iterable[dict], service_account: str, namespace: str) -> list[Grant]:
    """Every grant the rendered (Cluster)Role(Binding)s give ``namespace/service_account``, expanded per verb and
    resource. Aggregated roles and '*' are not expanded: the chart uses neither for its own accounts."""
    objects = list(manifests)
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects
             if o["kind"] in ("Role", "ClusterRole")}
    grants: list[Grant] = []
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == service_account
                   and s.get("namespace") == namespace for s in binding.get("subjects") or []):
            continue
        where = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], where if ref["kind"] == "Role" else None, ref["name"]))
        assert role is not None, f"{binding['kind']} {binding['metadata']['name']} refers to a missing {ref}"
        for rule in role.get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        grants.append(Grant(verb, group, resource, where, f"{role['kind']}/{ref['name']}"))
    return grants

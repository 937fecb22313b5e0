"""The chart as a Helm release on the real control plane, and what the API server holds of it.

``helm`` runs as the cluster's admin, with caches of its own (its discovery cache is keyed by host and port, which a
later control plane may reuse). Objects are found through the API server's discovery, as kubectl finds them, so a
check covers every kind the chart renders, other operators' CRDs included, and every kind the server serves when
looking for what a release left behind."""

from __future__ import annotations

import os
import subprocess
import urllib.error
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.testing import ControlPlane
from tests.deploy.conftest import CHART, helm_binary

#: PodSecurity admission at its strictest, enforced and also warned about (a warning comes back to helm on the
#: Deployment, before any Pod exists)
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}
INSTANCE = "app.kubernetes.io/instance"
HELM_TIMEOUT = 120


@dataclass(frozen=True)
class Resource:
    """One kind as the API server's discovery lists it."""

    group_version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: frozenset[str]

    def path(self, namespace: str = "", name: str = "") -> str:
        """The URL path of the collection (cluster-wide without ``namespace``) or of one object."""
        root = f"/apis/{self.group_version}" if "/" in self.group_version else f"/api/{self.group_version}"
        scope = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{root}{scope}/{self.plural}" + (f"/{name}" if name else "")


@dataclass
class Discovery:
    """The kinds the API server serves, asked once per group version (again when a kind is not found: a CRD
    installed since)."""

    cluster: ControlPlane
    _served: dict[str, list[Resource]] = field(default_factory=dict)

    def group_version(self, group_version: str, refresh: bool = False) -> list[Resource]:
        if refresh or group_version not in self._served:
            root = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
            listed = self.cluster.request("GET", root)["resources"]
            self._served[group_version] = [
                Resource(group_version, r["name"], r["kind"], r["namespaced"], frozenset(r["verbs"]))
                for r in listed if "/" not in r["name"]]
        return self._served[group_version]

    def resource(self, api_version: str, kind: str) -> Resource:
        for refresh in (False, True):
            found = [r for r in self.group_version(api_version, refresh) if r.kind == kind]
            if found:
                return found[0]
        raise LookupError(f"the API server serves no {kind} in {api_version}")

    def listable(self) -> list[Resource]:
        """Every kind that can be listed, in each group's preferred version (each object once)."""
        groups = self.cluster.request("GET", "/apis")["groups"]
        versions = ["v1", *(g["preferredVersion"]["groupVersion"] for g in groups)]
        return [r for version in versions for r in self.group_version(version, refresh=True) if "list" in r.verbs]

    def stored(self, manifest: dict[str, Any], namespace: str) -> dict[str, Any] | None:
        """The server's copy of a manifest's object (its own namespace, else ``namespace``), None when absent."""
        resource = self.resource(manifest["apiVersion"], manifest["kind"])
        where = manifest["metadata"].get("namespace") or namespace
        try:
            return dict(self.cluster.request("GET", resource.path(where, manifest["metadata"]["name"])))
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def labelled(self, selector: str) -> list[str]:
        """``kind namespace/name`` of every object, of every kind and namespace, that ``selector`` matches."""
        query = "?labelSelector=" + urllib.parse.quote(selector)
        found = []
        for resource in self.listable():
            for item in self.cluster.request("GET", resource.path() + query)["items"]:
                meta = item["metadata"]
                found.append(f"{resource.kind} {meta.get('namespace', '')}/{meta['name']}")
        return found


def differences(rendered: Any, stored: Any, path: str = "") -> list[str]:
    """Where ``stored`` lacks or changes what ``rendered`` says. ``stored`` may add to it (defaults, status,
    metadata); a field the server pruned or refused to keep shows here. A rendered null means "unset"."""
    if rendered is None:
        return []
    if isinstance(rendered, dict):
        if not isinstance(stored, dict):
            return [f"{path}: {stored!r} is no object"]
        return [d for key, value in rendered.items() for d in differences(value, stored.get(key), f"{path}.{key}")]
    if isinstance(rendered, list):
        if not isinstance(stored, list) or len(stored) != len(rendered):
            return [f"{path}: {stored!r} is not a list of {len(rendered)}"]
        return [d for i, (mine, theirs) in enumerate(zip(rendered, stored, strict=True))
                for d in differences(mine, theirs, f"{path}[{i}]")]
    return [] if rendered == stored else [f"{path}: {rendered!r} stored as {stored!r}"]


def create_namespace(cluster: ControlPlane, prefix: str, labels: dict[str, str] | None = None) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": name, "labels": labels or {}}})
    return name


@dataclass
class Release:
    """One release of the chart in a namespace of its own, installed, upgraded and uninstalled by ``helm``."""

    cluster: ControlPlane
    name: str
    namespace: str
    workdir: Path

    def helm(self, *args: str, timeout: float = HELM_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """``helm`` as the admin; fails the test with helm's own words when it fails."""
        home = self.workdir / "helm-home"
        env = {**os.environ, "KUBECACHEDIR": str(home / "kube-cache"), "HELM_CACHE_HOME": str(home / "cache"),
               "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}
        result = subprocess.run([helm_binary(), *args, "--kubeconfig", str(self.cluster.kubeconfig),
                                 "--namespace", self.namespace], capture_output=True, text=True, env=env,
                                timeout=timeout)
        assert result.returncode == 0, f"helm {' '.join(args)} failed:\n{result.stderr}"
        return result

    def _values_file(self, values: dict[str, Any]) -> str:
        path = self.workdir / f"{self.name}-values-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump(values))
        return str(path)

    def install(self, values: dict[str, Any], *extra: str,
                timeout: float = HELM_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Install without ``crds/``: the package's control plane already serves them, from that very folder
        (devcluster.testing.DEFAULT_CRDS); a release of another domain renders its own (crds.renderForDomain).
        ``extra``: more of helm's arguments (``--wait``)."""
        return self.helm("install", self.name, str(CHART), "--skip-crds", "-f", self._values_file(values), *extra,
                         timeout=timeout)

    def upgrade(self, values: dict[str, Any], *extra: str,
                timeout: float = HELM_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Upgrade to exactly ``values`` over the chart's defaults (no --reuse-values)."""
        return self.helm("upgrade", self.name, str(CHART), "--skip-crds", "-f", self._values_file(values), *extra,
                         timeout=timeout)

    def uninstall(self) -> subprocess.CompletedProcess[str]:
        return self.helm("uninstall", self.name)

    def manifest(self) -> list[dict[str, Any]]:
        """What helm rendered and applied for the release's current revision (hooks left out)."""
        return [doc for doc in yaml.safe_load_all(self.helm("get", "manifest", self.name).stdout) if doc]

    def hooks(self) -> list[dict[str, Any]]:
        """The release's hooks (the ``helm test`` Pod), which helm creates only when they run."""
        return [doc for doc in yaml.safe_load_all(self.helm("get", "hooks", self.name).stdout) if doc]


def pod_security_warnings(helm_output: subprocess.CompletedProcess[str]) -> list[str]:
    """The PodSecurity warnings the API server sent back to helm (``warn=restricted``) while it applied."""
    return [line for line in helm_output.stderr.splitlines() if "PodSecurity" in line]

"""``poolboy dev --cluster node``: the system as it is deployed, on this machine. The real control plane and a node
beside it (``node/``: kubelet, containerd, kube-proxy, CoreDNS), the project's image and a Redis image imported into
the node (no registry), and the Helm chart installed by ``helm`` into the operator namespace, PodSecurity
``restricted`` enforced there. Ready once every pod of the release is; ``kubectl`` then reaches it all (logs,
exec, port-forward to Flower). Needs root (the node's network namespace, cgroups and mounts)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import urllib.error
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from procutil import InTemporaryDirectory
from stack.service_accounts import CHART, helm_binary

if TYPE_CHECKING:  # the image carries neither: only `poolboy dev --cluster node` loads them
    from controlplane import ControlPlane
    from node.launcher import Node

#: PodSecurity at its strictest on the operator namespace, enforced (the chart's pods comply)
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}
RELEASE = "poolboy"


def chart_values(node: Node, managed: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    """The chart's values for a node that pulls nothing: its imported images (never pulled), the kinds Poolboy
    may manage, and ``more`` over them."""
    from node.images import REDIS_REPOSITORY, named

    values: dict[str, Any] = {
        "image": {"pullPolicy": "Never"},
        "redis": {"image": named(node.images or [], REDIS_REPOSITORY)},
        "managedResources": managed,
    }
    return {**values, **more}


class DeployedStack(InTemporaryDirectory):
    """The control plane, a node, and the chart's release on it; see the module docstring."""

    def __init__(self, kubeconfig: Path, namespace: str, managed: list[dict[str, Any]], log_dir: Path,
                 values: dict[str, Any] | None = None, timeout: float = 300.0) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="poolboy-deployed-")
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.managed = managed
        self.log_dir = log_dir
        self.values = values or {}
        self.timeout = timeout
        self.cluster: ControlPlane | None = None
        self.node: Node | None = None
        self.timings: dict[str, float] = {}

    def start(self) -> DeployedStack:
        from controlplane import ControlPlane
        from node.launcher import CONTROL_PLANE_OPTIONS, Node

        crds = Path(CHART) / "crds"
        helm_binary()  # built first where this machine has none: a failure shows before a cluster starts
        try:
            started = time.monotonic()
            self.cluster = ControlPlane(crds=[crds], kubeconfig=self.kubeconfig,
                                        log_dir=self.log_dir / "control-plane", **CONTROL_PLANE_OPTIONS).start()
            self.timings["control plane"] = time.monotonic() - started
            started = time.monotonic()
            self.node = Node(self.cluster, log_dir=self.log_dir / "node").start()
            self.timings["node"] = time.monotonic() - started
            started = time.monotonic()
            self.install()
            self.timings["helm install --wait"] = time.monotonic() - started
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.node is not None:
            self.node.stop()
        if self.cluster is not None:
            self.cluster.stop()
        self.node = self.cluster = None

    def install(self) -> None:
        """The operator namespace (restricted) and the release in it, waiting until every Deployment is
        Available."""
        assert self.cluster is not None and self.node is not None
        try:
            self.cluster.request("POST", "/api/v1/namespaces",
                                 {"metadata": {"name": self.namespace, "labels": RESTRICTED}})
        except urllib.error.HTTPError as error:
            if error.code != 409:
                raise
        values = Path(self._tmp.name) / "values.yaml"
        values.write_text(yaml.safe_dump(chart_values(self.node, self.managed, **self.values)))
        self.helm("install", RELEASE, str(CHART), "--skip-crds", "-f", str(values), "--wait",
                  "--timeout", f"{int(self.timeout)}s")

    def helm(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``helm`` as the cluster's admin, in the operator namespace; RuntimeError with helm's words on failure."""
        home = Path(self._tmp.name) / "helm"
        env = {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
               "HELM_DATA_HOME": str(home / "data"), "KUBECACHEDIR": str(home / "kube-cache")}
        result = subprocess.run([helm_binary(), *args, "--kubeconfig", str(self.kubeconfig), "--namespace",
                                 self.namespace], capture_output=True, text=True, env=env, timeout=self.timeout + 60)
        if result.returncode != 0:
            raise RuntimeError(f"helm {args[0]} failed: {result.stderr.strip()}")
        return result

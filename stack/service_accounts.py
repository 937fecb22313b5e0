"""Components under their chart ServiceAccounts on the real control plane, as their pods would run them.

The chart's RBAC (its ServiceAccounts, Roles, ClusterRoles and bindings, rendered by ``helm template`` and applied
unchanged with server-side apply) is installed with the admin identity. Each component then gets a directory like
the one the kubelet mounts in a pod: a TokenRequest token of its own ServiceAccount, the cluster's CA and the
namespace. Its client finds them through ``POOLBOY_SERVICE_ACCOUNT_DIR`` and ``KUBERNETES_SERVICE_HOST``/``_PORT``,
verifies TLS against that CA and re-reads the token file every minute. As the kubelet does, tokens are renewed at
80% of their lifetime; each is bound to a Secret of its own, so deleting that Secret revokes it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from stack import kubetools

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm"
#: the release name: ``poolboy`` gives the chart's objects the names ``poolboy-<component>``
RELEASE = "poolboy"
#: what ``helm template`` renders that this installs: identities and their grants, nothing that runs
RBAC_KINDS = ("ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
#: the components that call the API (beat and Flower make no call: their pods mount no token)
WITH_TOKEN = ("watcher", "worker")
#: a kubelet asks for about an hour and renews at 80% of the lifetime
TOKEN_SECONDS = 3600
RENEW_AT = 0.8
#: how often the renewer looks at the tokens' ages
RENEW_TICK = 5.0


def helm_binary() -> str:
    """The pinned ``helm`` (:mod:`stack.kubetools`), built first where this machine has none."""
    return kubetools.binary("helm")


def render_chart(namespace: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart as ``helm template`` renders it for ``values`` (``{"a.b": value}``, passed as --set-json)."""
    args = [helm_binary(), "template", RELEASE, str(CHART), "--namespace", namespace]
    for path, value in values.items():
        args += ["--set-json", f"{path}={json.dumps(value)}"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode:
        raise RuntimeError(f"helm template failed: {result.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@dataclass
class Token:
    """A component's current token: the Secret it is bound to, when to renew it, and the binding of the token it
    replaced (deleted at the next renewal, when that token has long expired)."""

    binding: str
    renew_at: float
    replaced: str | None = None


class ServiceAccountIdentities:
    """Installs the chart's RBAC and keeps each component's mounted service-account token fresh.

    ``managed_resources`` is the chart's ``managedResources`` value: the kinds the providers of this stack create.
    """

    def __init__(self, cluster: Any, namespace: str, domain: str, directory: Path,
                 managed_resources: Iterable[dict[str, Any]] = ()) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.domain = domain
        self.directory = directory
        self.managed_resources = list(managed_resources)
        self.tokens: dict[str, Token] = {}
        self._serial = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    # --- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> ServiceAccountIdentities:
        self.install_rbac()
        for component in WITH_TOKEN:
            self.project(component)
        self._renewer = threading.Thread(target=self._renew_forever, name="token-renewer", daemon=True)
        self._renewer.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)

    # --- the chart's RBAC ------------------------------------------------------------------------------------

    def chart_values(self) -> dict[str, Any]:
        return {"domain": self.domain, "managedResources": self.managed_resources}

    def install_rbac(self) -> None:
        """Apply the chart's RBAC objects as rendered (an upgrade when the values changed)."""
        from kubernetes.dynamic import DynamicClient

        dynamic = DynamicClient(self.cluster.api_client())
        for manifest in render_chart(self.namespace, self.chart_values()):
            if manifest["kind"] not in RBAC_KINDS:
                continue
            resource = dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
            namespace = self.namespace if resource.namespaced else None
            resource.server_side_apply(body=manifest, name=manifest["metadata"]["name"], namespace=namespace,
                                       field_manager="helm", force_conflicts=True)

    def grant_managed(self, entry: dict[str, Any]) -> None:
        """Add an entry to ``managedResources`` and apply the chart's RBAC again, as ``helm upgrade`` would."""
        self.managed_resources.append(entry)
        self.install_rbac()

    @staticmethod
    def account(component: str) -> str:
        return f"{RELEASE}-{component}"

    def accounts(self) -> list[str]:
        """The ServiceAccounts the components with a token run as."""
        return [self.account(component) for component in WITH_TOKEN]

    # --- the mounted tokens ----------------------------------------------------------------------------------

    def mount(self, component: str) -> Path:
        """The directory of ``component``'s token, CA and namespace (empty for a component without a token)."""
        return self.directory / component

    def env(self, component: str) -> dict[str, str]:
        """What a pod of ``component`` sees: the API server's address and its mounted service account, and no
        kubeconfig (a path that does not exist, so a stray ``~/.kube/config`` is not used either)."""
        address = urlsplit(self.cluster.url)
        return {"KUBERNETES_SERVICE_HOST": address.hostname or "", "KUBERNETES_SERVICE_PORT": str(address.port),
                "POOLBOY_SERVICE_ACCOUNT_DIR": str(self.mount(component)),
                "KUBECONFIG": str(self.directory / "no-kubeconfig"),
                "POOLBOY_WATCHER_LEASE_NAME": f"{RELEASE}-watcher"}

    def project(self, component: str, revoke_previous: bool = False) -> str:
        """Request a new token for ``component``, bound to a new Secret, and replace the mounted file at once
        (write and rename, as the kubelet's atomic writer does); returns the token."""
        with self._lock:
            self._serial += 1
            binding = f"{self.account(component)}-token-{self._serial}"
            secret = self.cluster.request("POST", f"/api/v1/namespaces/{self.namespace}/secrets",
                                          {"metadata": {"name": binding}, "type": "Opaque"})
            review = self.cluster.request(
                "POST", f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{self.account(component)}/token",
                {"spec": {"expirationSeconds": TOKEN_SECONDS, "boundObjectRef": {
                    "kind": "Secret", "apiVersion": "v1", "name": binding, "uid": secret["metadata"]["uid"]}}})
            token = review["status"]["token"]
            self._write(component, token)
            previous = self.tokens.get(component)
            self.tokens[component] = Token(binding, time.monotonic() + RENEW_AT * TOKEN_SECONDS,
                                           previous.binding if previous and not revoke_previous else None)
        if previous is not None and revoke_previous:
            self.revoke(previous.binding)
        elif previous is not None and previous.replaced:
            self.revoke(previous.replaced)
        return str(token)

    def revoke(self, binding: str) -> None:
        """Delete the Secret a token is bound to: the API server refuses that token from then on."""
        self.cluster.request("DELETE", f"/api/v1/namespaces/{self.namespace}/secrets/{binding}")

    def _write(self, component: str, token: str) -> None:
        mount = self.mount(component)
        mount.mkdir(parents=True, exist_ok=True)
        files = {"token": token, "ca.crt": self.cluster.ca_file.read_text(), "namespace": self.namespace}
        for name, text in files.items():
            staged = mount / f".{name}.new"
            staged.write_text(text)
            os.chmod(staged, 0o600)
            os.replace(staged, mount / name)

    def _renew_forever(self) -> None:
        while not self._stop.wait(RENEW_TICK):
            self.renew_due(time.monotonic())

    def renew_due(self, now: float) -> list[str]:
        """Renew each token past 80% of its lifetime (the components renewed); an API server that is away is asked
        again on the next tick."""
        renewed = []
        for component, token in list(self.tokens.items()):
            if now < token.renew_at:
                continue
            try:
                self.project(component)
                renewed.append(component)
            except OSError as error:
                log.warning("renewing the token of %s failed (%s); trying again", component, error)
        return renewed

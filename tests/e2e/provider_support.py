"""Helpers for the provider-mode scenarios: the kubernetes client a Poolboy user would use, against the stack.

The scenarios write manifests the way an upstream Poolboy user writes them (plain dicts of ResourceProvider,
ResourcePool, ResourceClaim) and read back only what a user can observe: status fields, conditions, Events, and
the managed resources themselves.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException

from stack.local import LocalStack
from tests.waiting import wait_for

if TYPE_CHECKING:
    from controlplane.testing import User as ClusterUser

D = "poolboy.gpte.redhat.com"
V1 = f"{D}/v1"
NS = "poolboy"


def kubectl(stack: LocalStack, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Real ``kubectl`` against the stack's API server (the caller checks ``returncode``)."""
    return subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), *args],
                          capture_output=True, text=True, timeout=timeout)


def user_with_role(stack: LocalStack, role: str, namespace: str) -> ClusterUser:
    """A new user of the real control plane (a client certificate and a kubeconfig of its own) whose only grant is
    the built-in ``role`` (``edit``, ``view``; the chart aggregates claims into them) in ``namespace``, once the API
    server lets it list claims there."""
    cluster = stack.cluster
    assert cluster is not None, "needs the real control plane"
    user = cluster.add_user(f"{role}-{uuid.uuid4().hex[:6]}", ["developers"])
    client.RbacAuthorizationV1Api(cluster.api_client()).create_namespaced_role_binding(namespace, {
        "metadata": {"name": f"{user.name}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.name}]})
    claims = client.CustomObjectsApi(user.api_client())
    wait_for(lambda: claims.list_namespaced_custom_object(D, "v1", namespace, "resourceclaims"),
             timeout=15, interval=0.2, message=f"the user's {role} grant in {namespace}")
    return user


def timestamp(delta: timedelta = timedelta()) -> str:
    """A Poolboy timestamp (UTC, whole seconds) ``delta`` from now."""
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


class User:
    """A cluster user with the official client: creates objects, reads what Poolboy shows."""

    def __init__(self, stack: LocalStack) -> None:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
        api_client = client.ApiClient(configuration)
        self.stack = stack
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)

    # --- setup ---------------------------------------------------------------------------------------------

    def namespace(self, prefix: str) -> str:
        """A fresh user namespace, so every scenario stays independent of the others."""
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.core.create_namespace({"metadata": {"name": name}})
        return name

    def provider(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.custom.create_namespaced_custom_object(D, "v1", NS, "resourceproviders", {
            "apiVersion": V1, "kind": "ResourceProvider", "metadata": {"name": name, "namespace": NS}, "spec": spec})

    def pool(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.custom.create_namespaced_custom_object(D, "v1", NS, "resourcepools", {
            "apiVersion": V1, "kind": "ResourcePool", "metadata": {"name": name, "namespace": NS}, "spec": spec})

    def claim(self, namespace: str, name: str, spec: dict[str, Any],
              metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        meta = {"name": name, "namespace": namespace, **(metadata or {})}
        return self.custom.create_namespaced_custom_object(D, "v1", namespace, "resourceclaims", {
            "apiVersion": V1, "kind": "ResourceClaim", "metadata": meta, "spec": spec})

    # --- reads ---------------------------------------------------------------------------------------------

    def get_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(namespace, "resourceclaims", name)

    def get_handle(self, name: str) -> dict[str, Any] | None:
        return self._get(NS, "resourcehandles", name)

    def get_pool(self, name: str) -> dict[str, Any] | None:
        return self._get(NS, "resourcepools", name)

    def _get(self, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
        try:
            return self.custom.get_namespaced_custom_object(D, "v1", namespace, plural, name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def handles(self, label_selector: str = "") -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(D, "v1", NS, "resourcehandles",
                                                         label_selector=label_selector)["items"]

    def pool_handles(self, pool: str, unbound_only: bool = True) -> list[dict[str, Any]]:
        items = self.handles(f"{D}/resource-pool-name={pool}")
        return [h for h in items if not (unbound_only and h["spec"].get("resourceClaim"))]

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.core.read_namespaced_config_map(name, namespace).to_dict()
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def config_maps(self, namespace: str) -> list[Any]:
        return self.core.list_namespaced_config_map(namespace).items

    def events(self, namespace: str, name: str) -> list[Any]:
        return [e for e in self.core.list_namespaced_event(namespace).items if e.involved_object.name == name]

    # --- writes --------------------------------------------------------------------------------------------

    def patch_claim(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.custom.patch_namespaced_custom_object(D, "v1", namespace, "resourceclaims", name, patch)

    def patch_claim_status(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.custom.patch_namespaced_custom_object_status(D, "v1", namespace, "resourceclaims", name, patch)

    def delete_claim(self, namespace: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(D, "v1", namespace, "resourceclaims", name)

    # --- waits ---------------------------------------------------------------------------------------------

    def wait_claim(self, namespace: str, name: str, predicate: Any, timeout: float = 15.0,
                   message: str = "claim condition") -> dict[str, Any]:
        """The claim once ``predicate(claim)`` holds; on timeout the failure shows the claim and the logs."""
        last: dict[str, Any] = {}

        def check() -> dict[str, Any] | None:
            claim = self.get_claim(namespace, name)
            last["claim"] = claim
            return claim if claim is not None and predicate(claim) else None

        try:
            return wait_for(check, timeout=timeout, interval=0.1, message=f"{namespace}/{name}: {message}")
        except AssertionError as error:
            raise AssertionError(f"{error}\nlast claim: {last.get('claim')}") from None

    def wait_ready_pool_handles(self, pool: str, count: int, timeout: float = 30.0,
                                resource_of: Callable[[dict[str, Any]], Any] | None = None) -> list[dict[str, Any]]:
        """``count`` ready unbound handles of ``pool``; on timeout the failure shows every handle of the pool (and,
        with ``resource_of``, what it manages) and the logs, to tell which side stopped."""
        def ready() -> list[dict[str, Any]] | None:
            handles = [h for h in self.pool_handles(pool) if status(h).get("ready") is True]
            return handles if len(handles) >= count else None

        try:
            return wait_for(ready, timeout=timeout, interval=0.1, message=f"pool {pool}: {count} ready unbound handles")
        except AssertionError as error:
            seen = [(h["metadata"]["name"], h["spec"].get("resourceClaim"), status(h),
                     resource_of(h) if resource_of else None) for h in self.pool_handles(pool, unbound_only=False)]
            shown = f"pool: {self.get_pool(pool)}\nhandles: {seen}\n{self.stack.logs()}"
            raise AssertionError(f"{error}\n{shown}") from None

    def wait_bound(self, namespace: str, name: str, timeout: float = 15.0) -> dict[str, Any]:
        return self.wait_claim(namespace, name, lambda c: (c.get("status") or {}).get("resourceHandle"),
                               timeout=timeout, message="bound")

    def wait_gone(self, namespace: str, name: str, timeout: float = 15.0) -> None:
        wait_for(lambda: self.get_claim(namespace, name) is None, timeout=timeout, interval=0.1,
                 message=f"claim {namespace}/{name} deleted")


def status(obj: dict[str, Any] | None) -> dict[str, Any]:
    """``obj.status`` ({} when the object or its status is absent)."""
    return (obj or {}).get("status") or {}


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The condition of ``type_`` in ``obj.status.conditions`` ({} when absent)."""
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == type_:
            return item
    return {}


def config_map_provider(namespace: str, **extra: Any) -> dict[str, Any]:
    """A parameterised ConfigMap provider like the README's: ``greeting`` flows into ``data.greeting``."""
    spec: dict[str, Any] = {
        "parameters": [{"name": "greeting", "allowUpdate": True, "default": {"value": "hello"}}],
        "template": {"enable": True, "definition": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": namespace},
            "data": {"greeting": "{{ greeting }}"}}},
        "override": {"metadata": {"name": "cm-{{ guid }}"}},
        "updateFilters": [{"pathMatch": "/data/.*"}],
        "healthCheck": "true",
        "readinessCheck": "data.greeting is defined",
    }
    spec.update(extra)
    return spec

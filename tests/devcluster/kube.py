"""Small helpers shared by the devcluster conformance tests.

They exist so that every test talks to the server the same way a controller does — through the official
``kubernetes`` client over HTTP — while still being able to look at what the real API server guarantees but the
generated models hide (the ``Status`` body of an error, ``kind: XList`` of a list, raw watch frames).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.waiting import wait_for

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def no_retry_client(kubeconfig: str | Any) -> client.ApiClient:
    """A client whose transport never retries by itself.

    urllib3, under the ``kubernetes`` client, silently retries a 429 carrying Retry-After (sleeping for it) up to
    three times; fault-injection tests must see each injected answer instead.
    """
    from kubernetes import config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.retries = False
    return client.ApiClient(configuration)


def unique(prefix: str) -> str:
    """A DNS-1123 name that no other test (or earlier run against the same server) can collide with."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def status_of(error: ApiException) -> dict[str, Any]:
    """The ``metav1.Status`` body the real API server sends with every error response."""
    assert error.body, f"error {error.status} carried no body"
    body = json.loads(error.body)
    assert body.get("kind") == "Status", body
    return body


def expect_error(code: int, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Run ``call`` and require an ApiException with HTTP ``code``; return its Status body."""
    try:
        call(*args, **kwargs)
    except ApiException as error:
        assert error.status == code, f"expected HTTP {code}, got {error.status}: {error.body}"
        body = status_of(error)
        assert body.get("code") == code, body
        assert body.get("status") == "Failure", body
        return body
    raise AssertionError(f"expected HTTP {code}, the call succeeded")


def raw(api: client.ApiClient, method: str, path: str, query: list[tuple[str, Any]] | None = None,
        body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    """A request through the official client's transport; returns (status, headers, parsed JSON or text)."""
    all_headers = {"Accept": "application/json", **(headers or {})}
    if body is not None and "Content-Type" not in all_headers:
        all_headers["Content-Type"] = "application/json"
    params = api.param_serialize(method=method, resource_path=path, query_params=query or [],
                                 header_params=all_headers, body=body, auth_settings=["BearerToken"])
    response = api.call_api(*params)
    data = response.read()
    text = data.decode() if data else ""
    try:
        parsed: Any = json.loads(text) if text else None
    except json.JSONDecodeError:
        parsed = text
    return response.status, response.headers, parsed


def raw_ok(api: client.ApiClient, method: str, path: str, **kwargs: Any) -> Any:
    """``raw`` that requires a 2xx answer and returns the parsed body."""
    status, _, parsed = raw(api, method, path, **kwargs)
    assert 200 <= status < 300, f"{method} {path} -> {status}: {parsed}"
    return parsed


def names(items: list[Any]) -> set[str]:
    """Names of listed objects, whether models or dicts."""
    return {item["metadata"]["name"] if isinstance(item, dict) else item.metadata.name for item in items}


# --- test CRDs, created at runtime through the API -----------------------------------------------------------

@dataclass(frozen=True)
class Crd:
    """Coordinates of a CRD created by a test."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    scope: str
    short_name: str

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def namespaced(self) -> bool:
        return self.scope == "Namespaced"

    def body(self, name: str, spec: Any = None, namespace: str | None = None, **metadata: Any) -> dict[str, Any]:
        """A custom resource of this kind."""
        meta: dict[str, Any] = {"name": name, **metadata}
        if namespace:
            meta["namespace"] = namespace
        obj: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta}
        if spec is not None:
            obj["spec"] = spec
        return obj


OPEN_SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def crd_manifest(crd: Crd, schema: dict[str, Any], status_subresource: bool,
                 scale: dict[str, str] | None = None) -> dict[str, Any]:
    version: dict[str, Any] = {"name": crd.version, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema}}
    if status_subresource:
        version["subresources"] = {"status": {}}
    if scale is not None:
        version.setdefault("subresources", {})["scale"] = scale
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd.name},
        "spec": {
            "group": crd.group,
            "scope": crd.scope,
            "names": {"plural": crd.plural, "singular": crd.singular, "kind": crd.kind,
                      "listKind": f"{crd.kind}List", "shortNames": [crd.short_name]},
            "versions": [version],
        },
    }


def is_established(ext: client.ApiextensionsV1Api, name: str) -> bool:
    crd = ext.read_custom_resource_definition(name)
    conditions = (crd.status.conditions if crd.status else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def create_crd(api: client.ApiClient, kind: str = "Widget", scope: str = "Namespaced",
               schema: dict[str, Any] | None = None, status_subresource: bool = True,
               scale: dict[str, str] | None = None) -> Crd:
    """Create a CRD in a group of its own and wait (with a deadline) until it is Established."""
    tag = uuid.uuid4().hex[:8]
    lower = kind.lower()
    crd = Crd(group=f"t{tag}.conformance.test", version="v1", plural=f"{lower}s", singular=lower,
              kind=kind, scope=scope, short_name=f"w{tag}")
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(crd_manifest(crd, schema or OPEN_SPEC_SCHEMA, status_subresource, scale))
    wait_for(lambda: is_established(ext, crd.name), timeout=10, message=f"CRD {crd.name} Established")
    return crd


def delete_crd(api: client.ApiClient, crd: Crd) -> None:
    try:
        client.ApiextensionsV1Api(api).delete_custom_resource_definition(crd.name)
    except ApiException as error:
        if error.status != 404:
            raise


class Objects:
    """CustomObjectsApi bound to one CRD (and optionally one namespace), so tests read like kubectl."""

    def __init__(self, api: client.ApiClient, crd: Crd, namespace: str | None = None) -> None:
        self.api = client.CustomObjectsApi(api)
        self.crd = crd
        self.namespace = namespace

    def _where(self) -> tuple[str, str]:
        return self.crd.group, self.crd.version

    def create(self, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        g, v = self._where()
        if self.namespace:
            return self.api.create_namespaced_custom_object(g, v, self.namespace, self.crd.plural, body, **kwargs)
        return self.api.create_cluster_custom_object(g, v, self.crd.plural, body, **kwargs)

    def get(self, name: str) -> dict[str, Any]:
        g, v = self._where()
        if self.namespace:
            return self.api.get_namespaced_custom_object(g, v, self.namespace, self.crd.plural, name)
        return self.api.get_cluster_custom_object(g, v, self.crd.plural, name)

    def list(self, **kwargs: Any) -> dict[str, Any]:
        g, v = self._where()
        if self.namespace:
            return self.api.list_namespaced_custom_object(g, v, self.namespace, self.crd.plural, **kwargs)
        return self.api.list_cluster_custom_object(g, v, self.crd.plural, **kwargs)

    def replace(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        g, v = self._where()
        if self.namespace:
            return self.api.replace_namespaced_custom_object(g, v, self.namespace, self.crd.plural, name, body)
        return self.api.replace_cluster_custom_object(g, v, self.crd.plural, name, body)

    def replace_status(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        g, v = self._where()
        return self.api.replace_namespaced_custom_object_status(g, v, self.namespace, self.crd.plural, name, body)

    def patch(self, name: str, body: Any, content_type: str = MERGE) -> dict[str, Any]:
        g, v = self._where()
        if self.namespace:
            return self.api.patch_namespaced_custom_object(g, v, self.namespace, self.crd.plural, name, body,
                                                           _content_type=content_type)
        return self.api.patch_cluster_custom_object(g, v, self.crd.plural, name, body, _content_type=content_type)

    def patch_status(self, name: str, body: Any, content_type: str = MERGE) -> dict[str, Any]:
        g, v = self._where()
        return self.api.patch_namespaced_custom_object_status(g, v, self.namespace, self.crd.plural, name, body,
                                                              _content_type=content_type)

    def get_scale(self, name: str) -> dict[str, Any]:
        g, v = self._where()
        return self.api.get_namespaced_custom_object_scale(g, v, self.namespace, self.crd.plural, name)

    def replace_scale(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        g, v = self._where()
        return self.api.replace_namespaced_custom_object_scale(g, v, self.namespace, self.crd.plural, name, body)

    def patch_scale(self, name: str, body: Any, content_type: str = MERGE) -> dict[str, Any]:
        g, v = self._where()
        return self.api.patch_namespaced_custom_object_scale(g, v, self.namespace, self.crd.plural, name, body,
                                                             _content_type=content_type)

    def delete(self, name: str, **kwargs: Any) -> Any:
        g, v = self._where()
        if self.namespace:
            return self.api.delete_namespaced_custom_object(g, v, self.namespace, self.crd.plural, name, **kwargs)
        return self.api.delete_cluster_custom_object(g, v, self.crd.plural, name, **kwargs)

    def exists(self, name: str) -> bool:
        try:
            self.get(name)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    def gone(self, name: str) -> bool:
        return not self.exists(name)

"""Poolboy's own CRDs (``helm/crds/``, loaded by the ``devcluster`` fixture) served by devcluster.

One valid object of each kind is accepted, representative invalid ones are refused with 422 as a real API server
would, and discovery advertises the short names and the ``poolboy`` category.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from poolboy import DEFAULT_DOMAIN
from tests.devcluster.kube import expect_error, raw

GROUP, VERSION = DEFAULT_DOMAIN, "v1"
API_VERSION = f"{GROUP}/{VERSION}"
PROVIDER_REF = {"apiVersion": API_VERSION, "kind": "ResourceProvider", "name": "test", "namespace": "poolboy"}

#: plural -> a minimal valid object of that kind
VALID: dict[str, dict[str, Any]] = {
    "resourceproviders": {
        "kind": "ResourceProvider", "metadata": {"name": "test"},
        "spec": {"override": {"apiVersion": "v1", "kind": "ConfigMap"}, "lifespan": {"unclaimed": "1d"},
                 "parameters": [{"name": "p", "default": {"value": 3}}],
                 "updateFilters": [{"pathMatch": "/data/.*", "allowedOps": ["replace"]}]},
    },
    "resourceclaims": {
        "kind": "ResourceClaim", "metadata": {"name": "claim"},
        "spec": {"provider": {"name": "test", "parameterValues": {"p": 1}}},
    },
    "resourcehandles": {
        "kind": "ResourceHandle", "metadata": {"name": "guid-abcde"},
        "spec": {"resources": [{"provider": PROVIDER_REF, "template": {"data": {"a": "b"}}}],
                 "lifespan": {"end": "2030-01-01T00:00:00Z"}},
    },
    "resourcepools": {
        "kind": "ResourcePool", "metadata": {"name": "pool"},
        "spec": {"minAvailable": 1, "provider": {"name": "test"}, "lifespan": {"unclaimed": "7d"}},
    },
    "resourcepoolscalings": {
        "kind": "ResourcePoolScaling", "metadata": {"name": "scale"},
        "spec": {"resourcePool": {"name": "pool"}, "count": 2},
    },
    "resourcewatches": {
        "kind": "ResourceWatch", "metadata": {"name": "cluster-abc"},
        "spec": {"apiVersion": "v1", "kind": "ConfigMap", "refreshInterval": "5m"},
    },
}


@pytest.fixture()
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def body(plural: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, **VALID[plural]}


@pytest.mark.parametrize("plural", list(VALID))
def test_valid_object_of_each_kind_is_created(custom: client.CustomObjectsApi, namespace: str, plural: str) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body(plural))
    assert created["metadata"]["uid"]
    fetched = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, VALID[plural]["metadata"]["name"])
    assert fetched["spec"] == VALID[plural]["spec"]


@pytest.mark.parametrize(("plural", "spec"), [
    ("resourcepools", {"minAvailable": -1}),
    ("resourcepoolscalings", {"resourcePool": {"name": "pool"}}),
    ("resourceclaims", {"lifespan": {"end": "tomorrow"}}),
    ("resourceproviders", {"template": {"style": "mustache"}}),
    ("resourcewatches", {"apiVersion": "v1", "kind": "ConfigMap", "refreshInterval": "5h"}),
])
def test_invalid_spec_is_refused_with_422(custom: client.CustomObjectsApi, namespace: str, plural: str,
                                          spec: dict[str, Any]) -> None:
    invalid = {**body(plural), "spec": spec}
    expect_error(422, custom.create_namespaced_custom_object, GROUP, VERSION, namespace, plural, invalid)


def test_handle_name_pattern_is_enforced(custom: client.CustomObjectsApi, namespace: str) -> None:
    invalid = {**body("resourcehandles"), "metadata": {"name": "not-a-guid"}}
    expect_error(422, custom.create_namespaced_custom_object, GROUP, VERSION, namespace, "resourcehandles", invalid)


def test_claim_status_lifespan_maximum_needs_a_single_unit(custom: client.CustomObjectsApi, namespace: str) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", body("resourceclaims"))
    expect_error(422, custom.patch_namespaced_custom_object_status, GROUP, VERSION, namespace, "resourceclaims",
                 "claim", {"status": {"lifespan": {"maximum": "1d12h"}}})
    patched = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "resourceclaims", "claim",
        {"status": {"lifespan": {"maximum": "36h"}, "upstreamKey": {"kept": True}}})
    assert patched["status"]["lifespan"]["maximum"] == "36h"
    assert patched["status"]["upstreamKey"] == {"kept": True}


def test_pool_status_counts_are_typed(custom: client.CustomObjectsApi, namespace: str) -> None:
    """Counts are validated (minimum 0). Nulls are not tested here: since Kubernetes 1.20 the real server prunes
    a null in a non-nullable field instead of refusing it, so Poolboy must simply never write one."""
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourcepools", body("resourcepools"))
    expect_error(422, custom.patch_namespaced_custom_object_status, GROUP, VERSION, namespace, "resourcepools",
                 "pool", {"status": {"resourceHandleCount": {"available": -1, "ready": 0}}})
    status = {"resourceHandleCount": {"available": 1, "ready": 0}, "resourceHandles": [{"name": "guid-aaaaa"}]}
    patched = custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, "resourcepools", "pool",
                                                           {"status": status})
    assert patched["status"]["resourceHandleCount"] == status["resourceHandleCount"]
    assert patched["spec"]["minAvailable"] == 1


def test_discovery_advertises_short_names_and_category(api: client.ApiClient) -> None:
    code, _, resources = raw(api, "GET", f"/apis/{GROUP}/{VERSION}")
    assert code == 200
    by_name = {r["name"]: r for r in resources["resources"]}
    for plural in VALID:
        assert by_name[plural]["namespaced"] is True
        assert "poolboy" in by_name[plural].get("categories", [])
        assert by_name[plural].get("shortNames")
    assert "resourceclaims/status" in by_name
    assert "resourceproviders/status" in by_name  # the provider's Valid/Ready conditions

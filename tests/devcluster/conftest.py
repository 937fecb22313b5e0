"""Fixtures for the devcluster conformance suite: one client for the session, one namespace per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from devcluster.testing import DevCluster
from tests.devcluster.kube import Crd, Objects, create_crd, delete_crd, unique


@pytest.fixture(scope="session")
def api(devcluster: DevCluster) -> Iterator[client.ApiClient]:
    """The official client configured from the devcluster kubeconfig (as ``kubectl`` would be)."""
    api_client = devcluster.api_client()
    yield api_client
    api_client.close()


@pytest.fixture()
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture()
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    """A namespace of the test's own, so tests never see each other's objects."""
    name = unique("ns")
    core.create_namespace({"metadata": {"name": name}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise


@pytest.fixture(scope="session")
def widgets(api: client.ApiClient) -> Iterator[Crd]:
    """A namespaced CRD shared by tests that only need 'some custom kind with a status subresource'."""
    crd = create_crd(api, kind="Widget")
    yield crd
    delete_crd(api, crd)


@pytest.fixture()
def widget_objects(api: client.ApiClient, widgets: Crd, namespace: str) -> Objects:
    return Objects(api, widgets, namespace)


@pytest.fixture()
def make_crd(api: client.ApiClient) -> Iterator[Callable[..., Crd]]:
    """Create CRDs for one test (schema tests need their own); they are deleted afterwards."""
    created: list[Crd] = []

    def make(**kwargs: object) -> Crd:
        crd = create_crd(api, **kwargs)  # type: ignore[arg-type]
        created.append(crd)
        return crd

    yield make
    for crd in created:
        delete_crd(api, crd)

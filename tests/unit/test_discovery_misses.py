"""Discovery asks the API server again about a kind it did not find, but not more than once per MISS_RECHECK_S per
apiVersion: every handle run of a namespace with an OpenShift requester looks up ``user.openshift.io/v1``, which
plain Kubernetes does not serve, and each lookup used to cost a request."""

from __future__ import annotations

import pytest

from poolboy.kube.discovery import MISS_RECHECK_S, Discovery
from poolboy.kube.errors import ApiMissing, NotFound


class Server:
    """The discovery documents of an API server, and the requests it got (a pure unit test of the cache)."""

    def __init__(self) -> None:
        self.groups: dict[str, list[dict]] = {"/api/v1": [{"name": "namespaces", "kind": "Namespace"}]}
        self.requests: list[str] = []

    def request(self, method: str, path: str) -> dict:
        self.requests.append(path)
        if path not in self.groups:
            raise NotFound(404, "NotFound", f"{path} not found")
        return {"resources": self.groups[path]}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Server:
    return Server()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_an_absent_api_is_asked_about_once_per_interval_then_found_once_served(server: Server, clock: Clock) -> None:
    discovery = Discovery(server, clock=clock)  # type: ignore[arg-type]
    for _ in range(50):
        with pytest.raises(ApiMissing, match=r"user\.openshift\.io.*not served"):
            discovery.resource_info("user.openshift.io/v1", "User")
    assert server.requests == ["/apis/user.openshift.io/v1"]

    server.groups["/apis/user.openshift.io/v1"] = [{"name": "users", "kind": "User"}]
    clock.now += MISS_RECHECK_S - 0.1
    with pytest.raises(ApiMissing):
        discovery.resource_info("user.openshift.io/v1", "User")
    clock.now += 0.1
    assert discovery.resource_info("user.openshift.io/v1", "User").plural == "users"
    assert discovery.resource_info("user.openshift.io/v1", "User").plural == "users"
    assert len(server.requests) == 2


def test_a_kind_missing_from_a_served_api_is_rechecked_at_most_once_per_interval(server: Server, clock: Clock) -> None:
    discovery = Discovery(server, clock=clock)  # type: ignore[arg-type]
    assert discovery.resource_info("v1", "Namespace").plural == "namespaces"
    clock.now += MISS_RECHECK_S  # the document is old enough: the first miss re-reads it, the next ones do not
    for _ in range(10):
        with pytest.raises(ApiMissing, match="kind Widget is not served"):
            discovery.resource_info("v1", "Widget")
    assert server.requests == ["/api/v1", "/api/v1"]
    server.groups["/api/v1"].append({"name": "widgets", "kind": "Widget", "namespaced": True})
    clock.now += MISS_RECHECK_S
    assert discovery.resource_info("v1", "Widget").namespaced
    assert discovery.resource_info("v1", "Namespace").plural == "namespaces"
    assert len(server.requests) == 3


def test_forgetting_rereads_at_once(server: Server, clock: Clock) -> None:
    discovery = Discovery(server, clock=clock)  # type: ignore[arg-type]
    with pytest.raises(ApiMissing):
        discovery.resource_info("example.com/v1", "Thing")
    server.groups["/apis/example.com/v1"] = [{"name": "things", "kind": "Thing"}]
    discovery.forget_discovery("example.com/v1")
    assert discovery.resource_info("example.com/v1", "Thing").plural == "things"

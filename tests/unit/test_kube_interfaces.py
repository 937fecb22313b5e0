"""The interfaces a reconciler is handed (poolboy/kube/interfaces.py): a Reader that gets and lists, a Writer that
writes, an EventRecorder and a RESTMapper of their own; every implementation has their signatures, method by
method, and nothing the engine does for itself (reading ahead, the run's journal) is part of them."""

import inspect

import pytest

from cache.reader import CachedKubeClient
from poolboy.context import Context
from poolboy.kube import KubeClient
from poolboy.kube.discovery import Discovery
from poolboy.kube.event_recorder import ApiEventRecorder
from poolboy.kube.interfaces import Client, EventRecorder, Reader, RESTMapper, Writer
from poolboy.kube.no_cluster import NoCluster, NoClusterError
from poolboy.settings import Settings

SETTINGS = Settings(operator_namespace="op")


def _methods(protocol: type) -> list[str]:
    return sorted(name for name, value in vars(protocol).items() if inspect.isfunction(value)
                  and not name.startswith("_"))


def test_the_reader_reads_the_writer_writes_and_events_and_discovery_are_apart() -> None:
    assert set(_methods(Reader)) == {"get", "get_or_none", "list"}
    assert set(_methods(Writer)) == {"create", "replace", "replace_status", "patch_merge", "patch_json", "delete",
                                     "delete_if_exists"}
    assert not _methods(Client)  # nothing of its own
    assert set(_methods(EventRecorder)) == {"emit"}
    assert set(_methods(RESTMapper)) == {"resource_info"}


IMPLEMENTATIONS = [(KubeClient, Reader), (KubeClient, Writer), (CachedKubeClient, Reader), (CachedKubeClient, Writer),
                   (ApiEventRecorder, EventRecorder), (NoCluster, EventRecorder), (Discovery, RESTMapper)]


@pytest.mark.parametrize(("implementation", "protocol"), IMPLEMENTATIONS,
                         ids=[f"{i.__name__}-{p.__name__}" for i, p in IMPLEMENTATIONS])
def test_every_method_has_the_interface_signature(implementation: type, protocol: type) -> None:
    for name in _methods(protocol):
        wanted = inspect.signature(getattr(protocol, name))
        found = inspect.signature(getattr(implementation, name))
        assert list(found.parameters) == list(wanted.parameters), f"{implementation.__name__}.{name}"
        for parameter in wanted.parameters.values():
            assert found.parameters[parameter.name].kind == parameter.kind, f"{implementation.__name__}.{name}"
            assert found.parameters[parameter.name].default == parameter.default, f"{implementation.__name__}.{name}"


def test_the_cached_client_is_no_proxy() -> None:
    """Only what the interfaces name is reachable: a method a reconciler starts to use must be declared."""
    reader = CachedKubeClient(object.__new__(KubeClient), None)
    assert isinstance(reader, Client)
    assert not hasattr(reader, "watch")
    assert not hasattr(reader, "emit_event") and not hasattr(reader, "resource_info")


def test_the_api_client_hands_its_events_and_its_discovery_apart() -> None:
    client = KubeClient(None, SETTINGS)  # type: ignore[arg-type]  # no request is made: no connection needed
    assert isinstance(client.events, EventRecorder) and isinstance(client.discovery, RESTMapper)
    assert not hasattr(client, "emit_event")


def test_prefetching_is_the_engines_and_optional() -> None:
    """Context.prefetch asks the engine's read-ahead when there is one, and is a no-op otherwise."""
    named: list[list[tuple]] = []
    ctx = Context.without_cluster(SETTINGS, "a pure unit test")
    refs = [("v1", "ConfigMap", "cm", "ns")]
    ctx.prefetch(refs)  # no read-ahead: nothing asked, nothing raised
    ctx.prefetcher = lambda wanted: named.append(list(wanted))
    ctx.prefetch(refs)
    assert named == [refs]


def test_a_context_without_a_cluster_says_so_on_its_first_request_and_drops_its_events() -> None:
    ctx = Context.without_cluster(SETTINGS, "no kubeconfig")
    ctx.events.emit({"kind": "ConfigMap", "metadata": {"name": "cm"}}, "Reason", "message")  # Events never raise
    with pytest.raises(NoClusterError, match="get: no Kubernetes cluster is configured \\(no kubeconfig\\)"):
        ctx.kube.get("v1", "ConfigMap", "cm", "ns")
    with pytest.raises(NoClusterError, match="resource_info"):
        ctx.mapper.resource_info("v1", "ConfigMap")
    assert isinstance(ctx.kube, Client) and isinstance(ctx.mapper, RESTMapper)

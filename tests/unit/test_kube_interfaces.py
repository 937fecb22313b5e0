"""Both clients a reconciler may be handed implement the Reader/Writer interfaces, method by method."""

import inspect

import pytest

from cache.reader import CachedKubeClient
from poolboy.kube import KubeClient
from poolboy.kube.interfaces import Client, Reader, Writer


def _methods(protocol: type) -> list[str]:
    return sorted(name for name, value in vars(protocol).items() if inspect.isfunction(value)
                  and not name.startswith("_"))


def test_the_client_is_the_reader_and_the_writer() -> None:
    assert set(_methods(Reader)) == {"get", "get_or_none", "list", "prefetch", "prefetched"}
    assert {"create", "patch_json", "delete_if_exists", "emit_event"} <= set(_methods(Writer))
    assert not _methods(Client)  # nothing of its own


@pytest.mark.parametrize("implementation", [KubeClient, CachedKubeClient])
@pytest.mark.parametrize("protocol", [Reader, Writer])
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

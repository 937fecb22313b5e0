"""The watcher's event path, declared in one table (watcher.mapping.ROUTES): what each watched source wakes."""

from poolboy import keys
from poolboy.settings import Settings
from watcher import mapping

SETTINGS = Settings(operator_namespace="poolboy")


def _obj(kind: str, namespace: str, name: str, **annotations: str) -> dict:
    return {"apiVersion": SETTINGS.api_version, "kind": kind,
            "metadata": {"namespace": namespace, "name": name, "annotations": annotations}}


def test_every_poolboy_kind_has_a_route_that_wakes_its_own_key() -> None:
    routed = {route.kind: route for route in mapping.POOLBOY_ROUTES}
    assert set(routed) == {keys.KINDS[token] for token in keys.KINDS}
    for token, kind in keys.KINDS.items():
        assert routed[kind].keys(_obj(kind, "poolboy", "x"), SETTINGS) == [keys.make(token, "poolboy", "x")]


def test_only_claims_are_watched_in_every_namespace() -> None:
    assert [route.kind for route in mapping.POOLBOY_ROUTES if route.all_namespaces] == ["ResourceClaim"]
    handle = next(route for route in mapping.POOLBOY_ROUTES if route.kind == "ResourceHandle")
    assert handle.keys(_obj("ResourceHandle", "elsewhere", "h"), SETTINGS) == []


def test_a_managed_resource_wakes_its_handle_and_its_claim() -> None:
    obj = _obj("Anything", "user", "thing", **{
        SETTINGS.label("resource-handle-name"): "h", SETTINGS.label("resource-handle-namespace"): "poolboy",
        SETTINGS.label("resource-claim-name"): "c", SETTINGS.label("resource-claim-namespace"): "user"})
    assert mapping.MANAGED.keys(obj, SETTINGS) == ["handle/poolboy/h", "claim/user/c"]
    assert not mapping.MANAGED.poolboy


def test_cache_only_sources_wake_nothing() -> None:
    for route in mapping.CACHE_ONLY_ROUTES:
        assert route.cache_only and route.keys({"kind": route.kind, "metadata": {"name": "n"}}, SETTINGS) == []
    assert set(mapping.ROUTES) == {*mapping.POOLBOY_ROUTES, mapping.MANAGED, *mapping.CACHE_ONLY_ROUTES}

"""The bind JSON patch (docs/behaviour.md#binding): a resourceVersion test first, then labels, claim ref, provider,
resources."""

from __future__ import annotations

from datetime import UTC, datetime

from poolboy.context import Context
from poolboy.domain.binding import bind_ops, candidates, handle_spec_ops, provider_compatible
from poolboy.settings import Settings

SETTINGS = Settings(operator_namespace="op")
D = SETTINGS.domain
CTX = Context.without_cluster(SETTINGS, "a pure unit test")
CLAIM = {"metadata": {"name": "c", "namespace": "user"}}
P = {"apiVersion": f"{D}/v1", "kind": "ResourceProvider", "name": "p", "namespace": "op"}


def _handle(**spec: object) -> dict:
    return {"metadata": {"name": "guid-aaaaa", "resourceVersion": "41", "labels": {f"{D}/resource-pool-name": "pl"}},
            "spec": dict(spec)}


def _op(ops: list[dict], path: str) -> dict | None:
    return next((op for op in ops if op["path"] == path), None)


def test_bind_patch_starts_with_resource_version_test() -> None:
    ops = bind_ops(CTX, CLAIM, _handle(), provider_spec=None, claim_resources=[], lifespan_end=None)
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "41"}


def test_bind_patch_sets_claim_labels_keeping_pool_label_and_claim_reference() -> None:
    ops = bind_ops(CTX, CLAIM, _handle(), provider_spec=None, claim_resources=[], lifespan_end=None)
    assert _op(ops, "/metadata/labels")["value"] == {f"{D}/resource-pool-name": "pl",
                                                     f"{D}/resource-claim-name": "c",
                                                     f"{D}/resource-claim-namespace": "user"}
    assert _op(ops, "/spec/resourceClaim")["value"] == {"apiVersion": f"{D}/v1", "kind": "ResourceClaim",
                                                        "name": "c", "namespace": "user"}


def test_bind_patch_copies_effective_parameter_values_in_provider_mode() -> None:
    provider = {"name": "p", "parameterValues": {"size": 3}}
    ops = bind_ops(CTX, CLAIM, _handle(provider={"name": "p", "parameterValues": {}}), provider_spec=provider,
                   claim_resources=[], lifespan_end=None)
    assert _op(ops, "/spec/provider") == {"op": "add", "path": "/spec/provider", "value": provider}


def test_resources_mode_claim_binding_provider_pool_handle_removes_spec_provider() -> None:
    ops = bind_ops(CTX, CLAIM, _handle(provider={"name": "p"}), provider_spec=None, claim_resources=[],
                   lifespan_end=None)
    assert _op(ops, "/spec/provider") == {"op": "remove", "path": "/spec/provider"}


def test_bind_patch_names_resources_and_appends_missing_entries() -> None:
    handle = _handle(resources=[{"provider": P, "template": {"a": 1}}])
    ops = bind_ops(CTX, CLAIM, handle, provider_spec=None,
                   claim_resources=[{"name": "first", "provider": P}, {"name": "second", "provider": P}],
                   lifespan_end=None)
    assert _op(ops, "/spec/resources")["value"] == [{"provider": P, "template": {"a": 1}, "name": "first"},
                                                    {"provider": P, "name": "second"}]


def test_bind_patch_sets_lifespan_end() -> None:
    end = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    ops = bind_ops(CTX, CLAIM, _handle(lifespan={"default": "1h"}), provider_spec=None, claim_resources=[],
                   lifespan_end=end)
    assert _op(ops, "/spec/lifespan/end")["value"] == "2030-01-02T03:04:05Z"


def test_spec_ops_are_empty_when_the_handle_already_agrees() -> None:
    handle = _handle(provider={"name": "p", "parameterValues": {}}, lifespan={"end": "2030-01-02T03:04:05Z"})
    handle["metadata"]["annotations"] = {"a": "1"}
    assert handle_spec_ops(handle, provider_spec={"name": "p", "parameterValues": {}}, resources=None,
                           lifespan_end=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC), annotations={"a": "1"}) == []


def test_spec_ops_change_only_what_differs_and_keep_other_annotations() -> None:
    handle = _handle(resources=[{"provider": P}])
    handle["metadata"]["annotations"] = {"keep": "x"}
    ops = handle_spec_ops(handle, provider_spec=None, resources=[{"provider": P, "name": "r"}],
                          lifespan_end=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC), annotations={"a": "1"})
    assert [op["path"] for op in ops] == ["/spec/resources", "/spec/lifespan", "/metadata/annotations"]
    assert _op(ops, "/spec/lifespan")["value"] == {"end": "2030-01-02T03:04:05Z"}
    assert _op(ops, "/metadata/annotations")["value"] == {"keep": "x", "a": "1"}


def test_a_handle_made_for_a_claim_is_indexed_as_missed_demand_of_its_provider() -> None:
    domain = "poolboy.gpte.redhat.com"
    own = {"kind": "ResourceHandle",
           "metadata": {"name": "guid-a", "creationTimestamp": "2030-01-01T12:00:00Z",
                        "labels": {f"{domain}/resource-claim-name": "c", f"{domain}/resource-claim-namespace": "n"}},
           "spec": {"provider": {"name": "labs"}, "resourceClaim": {"name": "c", "namespace": "n"}}}
    from_pool = {**own, "metadata": {**own["metadata"], "labels": {**own["metadata"]["labels"],
                                                                   f"{domain}/resource-pool-name": "p"}}}
    entry = candidates.created_entry(own, domain)
    assert entry is not None and entry[0] == "created|provider=labs"
    assert entry[1] == datetime(2030, 1, 1, 12, tzinfo=UTC).timestamp()
    assert f"z:created|provider=labs\t{entry[1]!r}" in candidates.cache_entries(own, domain)
    assert candidates.created_entry(from_pool, domain) is None, "a pool handle bound later is a bind, not a miss"
    unbound_pool_handle = {**from_pool, "metadata": {**from_pool["metadata"],
                                                     "labels": {f"{domain}/resource-pool-name": "p"}}}
    assert candidates.created_entry(unbound_pool_handle, domain) is None


def test_a_provider_handle_serves_only_claims_of_its_provider() -> None:
    handle = _handle(provider={"name": "p", "parameterValues": {}})
    assert provider_compatible(handle, ["p"]) and provider_compatible(handle, ["p"], {"greeting": "hi"})
    assert not provider_compatible(handle, ["q"]) and not provider_compatible(handle, [])
    assert provider_compatible(_handle(resources=[{"provider": {"name": "q"}}]), ["p"])  # templates decide


def test_a_fresh_pool_handle_is_left_to_claims_with_its_parameter_values() -> None:
    fresh = _handle(provider={"name": "p", "parameterValues": {"greeting": "pool"}})  # resources not generated yet
    assert provider_compatible(fresh, ["p"], {"greeting": "pool", "size": 1})
    assert not provider_compatible(fresh, ["p"], {"greeting": "mine"})
    assert not provider_compatible(fresh, ["p"], {})
    assert provider_compatible(fresh, ["p"])  # a resources-mode claim: the bind removes spec.provider
    generated = {**fresh, "spec": {**fresh["spec"], "resources": [{"provider": P, "template": {}}]}}
    assert provider_compatible(generated, ["p"], {"greeting": "mine"})  # generated: the template comparison decides

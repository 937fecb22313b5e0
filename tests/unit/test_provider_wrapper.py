"""Pure parts of the provider wrapper and of managed-resource handling (no API, no templating engine needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from poolboy.domain import managed_resources, pool_handles
from poolboy.domain.provider import Provider, ProviderNotFound
from poolboy.result import PermanentError
from poolboy.settings import Settings

D = "poolboy.gpte.redhat.com"


def _provider(**spec) -> Provider:
    return Provider({"apiVersion": f"{D}/v1", "kind": "ResourceProvider",
                     "metadata": {"name": "p", "namespace": "op"}, "spec": spec})


class _Kube:
    def __init__(self, objects):
        self.objects = objects

    def get_or_none(self, api_version, kind, name, namespace=None):
        return self.objects.get(name)

    def list(self, api_version, kind, namespace=None):
        return list(self.objects.values())


def test_get_missing_provider_raises_provider_not_found() -> None:
    ctx = SimpleNamespace(kube=_Kube({}), settings=Settings())
    with pytest.raises(ProviderNotFound) as caught:
        Provider.get(ctx, "nope")
    assert isinstance(caught.value, PermanentError) and caught.value.reason == "ProviderNotFound"
    assert caught.value.message == "ResourceProvider nope not found"


def test_a_missing_provider_names_the_nearest_existing_ones() -> None:
    existing = {name: {"metadata": {"name": name}} for name in ("hello", "help", "world", "hello-large")}
    ctx = SimpleNamespace(kube=_Kube(existing), settings=Settings())
    with pytest.raises(ProviderNotFound) as caught:
        Provider.get(ctx, "helo")
    assert caught.value.near == ["hello", "help"]
    assert caught.value.message == "ResourceProvider helo not found; did you mean hello or help?"
    with pytest.raises(ProviderNotFound) as unlike:
        Provider.get(ctx, "database")
    assert unlike.value.message == "ResourceProvider database not found"


def test_ref_is_a_full_reference() -> None:
    assert _provider().ref == {"apiVersion": f"{D}/v1", "kind": "ResourceProvider", "name": "p", "namespace": "op"}


def test_defaults_of_spec_accessors() -> None:
    p = _provider()
    assert p.approval_pending_message == "Approval pending."
    assert p.resource_name == "p"
    assert not p.has_template_definition
    assert p.update_filters == [] and p.match_ignore == [] and p.linked_resource_providers == []
    assert _provider(override={}).has_template_definition
    assert _provider(template={"definition": {}}).has_template_definition
    assert _provider(resourceName="r").resource_name == "r"


def test_template_vars_handle_overrides_provider() -> None:
    p = _provider(vars={"a": 1, "b": 2})
    assert p.template_vars({"spec": {"vars": {"b": 3}}}) == {"a": 1, "b": 3}
    assert p.template_vars() == {"a": 1, "b": 2}


def test_effective_parameter_values_fill_value_and_schema_defaults_only_when_missing() -> None:
    p = _provider(parameters=[{"name": "a", "default": {"value": 1}},
                              {"name": "b", "validation": {"openAPIV3Schema": {"type": "integer", "default": 2}}},
                              {"name": "c"}])
    assert p.effective_parameter_values({"a": 9}) == {"a": 9, "b": 2}
    assert p.effective_parameter_values({"x": 1}) == {"x": 1, "a": 1, "b": 2}


@pytest.mark.parametrize(("name", "generate_name", "guid"), [
    ("guid-ab1cd", None, "ab1cd"),
    ("guid-my-thing", None, "my-thing"),
    ("app-xyz12", "app-", "xyz12"),
    ("handmade12345", None, "12345"),
])
def test_handle_guid(name, generate_name, guid) -> None:
    metadata = {"name": name}
    if generate_name:
        metadata["generateName"] = generate_name
    assert managed_resources.handle_guid({"metadata": metadata}) == guid


def test_resource_naming_rule() -> None:
    definition: dict = {"metadata": {}}
    managed_resources.apply_name(definition, 1, "ab1cd")
    assert definition["metadata"]["name"] == "guid1-ab1cd"
    definition = {"metadata": {"generateName": "app-"}}
    managed_resources.apply_name(definition, 0, "ab1cd")
    assert definition["metadata"] == {"name": "app-ab1cd"}
    definition = {"metadata": {"name": "fixed"}}
    managed_resources.apply_name(definition, 0, "ab1cd")
    assert definition["metadata"]["name"] == "fixed"


def test_reference_stickiness_forces_name_and_refuses_kind_change() -> None:
    definition = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new", "namespace": "b"}}
    managed_resources.enforce_reference(definition, {"apiVersion": "v1", "kind": "ConfigMap", "name": "old",
                                                     "namespace": "a"}, 0)
    assert definition["metadata"] == {"name": "old", "namespace": "a"}
    with pytest.raises(PermanentError, match="would change from v1 ConfigMap"):
        managed_resources.enforce_reference({"apiVersion": "v1", "kind": "Secret", "metadata": {}},
                                            {"apiVersion": "v1", "kind": "ConfigMap", "name": "old"}, 0)


def test_update_without_filters_only_touches_poolboy_annotations() -> None:
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "x", "uid": "u", "annotations": {f"{D}/resource-handle-uid": "wrong", "other": "o"}},
        "data": {"a": "changed-by-someone"}}
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "x", "annotations": {f"{D}/resource-handle-uid": "right"}}, "data": {"a": "1"}}
    ops = managed_resources.update_ops(live, desired, [], D)
    assert ops == [{"op": "replace", "path": f"/metadata/annotations/{D}~1resource-handle-uid", "value": "right"}]


def test_update_filters_first_match_decides() -> None:
    live = {"metadata": {"name": "x", "annotations": {}}, "data": {"a": "0", "b": "0"}, "status": {"s": 1}}
    desired = {"metadata": {"name": "x", "annotations": {}}, "data": {"a": "1", "b": "1"}}
    filters = [{"pathMatch": "/data/a", "allowedOps": ["replace"]}, {"pathMatch": "/data/.*", "allowedOps": ["add"]}]
    ops = managed_resources.update_ops(live, desired, filters, D)
    assert ops == [{"op": "replace", "path": "/data/a", "value": "1"}]


def test_update_adds_annotations_map_when_live_has_none() -> None:
    live = {"metadata": {"name": "x"}}
    desired = {"metadata": {"name": "x", "annotations": {f"{D}/resource-index": "0"}}}
    ops = managed_resources.update_ops(live, desired, [], D)
    assert ops[0] == {"op": "add", "path": "/metadata/annotations", "value": {}}
    assert ops[1]["path"] == f"/metadata/annotations/{D}~1resource-index"


def test_scaling_count_is_a_set_minus_unhealthy_deleted() -> None:
    scaling = {"metadata": {"name": "s"}, "status": {"handles": ["guid-a", "guid-b"]}}
    pool = {"status": {pool_handles.UNHEALTHY_DELETED_KEY: {"s": ["guid-b"]}}}
    assert pool_handles.scaling_created(scaling, ["guid-a", "guid-c"], pool) == {"guid-a", "guid-c"}
    assert pool_handles.scaling_created(scaling, [], None) == {"guid-a", "guid-b"}


@pytest.mark.parametrize(("spec", "reads"), [
    ({"override": {"data": {"t": "{{ now(true, '%H:%M') }}"}}}, True),
    ({"override": {"data": {"t": "{{ timestamp('2024-01-01T00:00:00Z').add('1h') }}"}}}, True),
    ({"readinessCheck": "status.end | to_datetime > datetime.now()"}, True),
    ({"override": {"data": {"t": "{{ guid }}"}}, "readinessCheck": "true"}, False),
    ({"lifespan": {"default": "1d"}}, False),
])
def test_a_provider_reads_the_clock_when_a_template_names_it(spec: dict, reads: bool) -> None:
    provider = Provider({"metadata": {"name": "p", "namespace": "poolboy"}, "spec": spec})
    assert provider.reads_clock is reads

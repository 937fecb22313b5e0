"""A provider's own spec is checked field by field, and every problem names its field path (pure, no cluster)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from poolboy.domain import conditions as cond
from poolboy.domain.provider import Provider, ProviderInvalid
from poolboy.domain.provider_validation import describe, problems
from poolboy.reconcilers.provider import desired_status, validity

DEFINITION = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": "{{ v }}"}}


def _paths(spec: dict) -> list[str]:
    return [path for path, _ in problems(spec)]


def test_a_valid_provider_has_no_problem() -> None:
    spec = {
        "template": {"enable": True, "definition": DEFINITION},
        "override": {"metadata": {"labels": {"x": "{{ resource_claim.metadata.name }}"}}},
        "default": {"data": {"a": "{{ 1 }}"}},
        "parameters": [{"name": "v", "default": {"template": "{{ 'x' }}"},
                        "validation": {"openAPIV3Schema": {"type": "string", "nullable": True, "pattern": "^[a-z]+$"},
                                       "checks": [{"name": "short", "check": "value | length < 10"}]}}],
        "validation": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                       "checks": [{"name": "c", "check": "spec.count | int > 0"}]},
        "healthCheck": "status.phase != 'Failed'", "readinessCheck": "status.phase == 'Ready'",
        "statusSummaryTemplate": {"phase": "{{ resources[0].state.status.phase | default('') }}"},
        "lifespan": {"default": "1d", "maximum": "{{ 7 }}d", "relativeMaximum": "3d12h", "unclaimed": "2h"},
        "matchIgnore": ["/data/.*", "/metadata/labels/x"],
        "updateFilters": [{"pathMatch": "/data/.*", "allowedOps": ["replace"]}],
        "linkedResourceProviders": [{"name": "base", "when": "v != ''", "waitFor": "ready",
                                     "parameterValues": {"x": "{{ v }}"}}],
        "vars": {"a": "{{ 1 + 1 }}"},
    }
    assert problems(spec) == []


def test_invalid_parameter_schema_names_the_field_inside_the_schema() -> None:
    found = problems({"parameters": [{"name": "n", "validation": {"openAPIV3Schema": {"type": "strng"}}}]})
    assert [describe(p) for p in found] == [
        "spec.parameters[0].validation.openAPIV3Schema.type: 'strng' is not valid under any of the given schemas"]


def test_invalid_resource_schema_is_reported() -> None:
    spec = {"validation": {"openAPIV3Schema": {"type": "object", "properties": {"n": {"minimum": "x"}}}}}
    assert _paths(spec) == ["spec.validation.openAPIV3Schema.properties.n.minimum"]


def test_lifespan_values_parse_or_templates_compile() -> None:
    found = problems({"lifespan": {"default": "banana", "maximum": "{{ 1 + }}d", "relativeMaximum": "{{ x }}d",
                                   "unclaimed": "soon"}})
    assert [path for path, _ in found] == ["spec.lifespan.default", "spec.lifespan.maximum", "spec.lifespan.unclaimed"]
    assert "invalid interval 'banana'" in found[0][1]
    assert "template syntax error" in found[1][1]


@pytest.mark.parametrize("field", ["healthCheck", "readinessCheck"])
def test_checks_must_compile_as_conditions(field: str) -> None:
    found = problems({field: "status.phase == "})
    assert [path for path, _ in found] == [f"spec.{field}"]
    assert found[0][1].startswith("template syntax error")


def test_unknown_filter_is_a_compile_error() -> None:
    found = problems({"template": {"definition": {"data": {"v": "{{ v | no_such_filter }}"}}}})
    assert found == [("spec.template.definition.data.v", "template syntax error: No filter named 'no_such_filter'.")]


def test_every_template_kind_is_compiled() -> None:
    broken = "{{ 1 + }}"
    spec = {
        "template": {"enable": True, "definition": {"a": broken}},
        "default": {"b": broken}, "override": {"c": [broken]},
        "statusSummaryTemplate": {"d": broken}, "vars": {"e": broken},
        "parameters": [{"name": "p", "default": {"template": broken},
                        "validation": {"checks": [{"name": "c", "check": "1 +"}]}}],
        "validation": {"checks": [{"name": "c", "check": "1 +"}]},
        "linkedResourceProviders": [{"name": "l", "when": "1 +", "waitFor": "1 +", "parameterValues": {"x": broken}}],
    }
    assert _paths(spec) == [
        "spec.template.definition.a", "spec.statusSummaryTemplate.d", "spec.vars.e", "spec.default.b",
        "spec.override.c[0]", "spec.parameters[0].default.template",
        "spec.linkedResourceProviders[0].parameterValues.x",
        "spec.validation.checks[0].check", "spec.parameters[0].validation.checks[0].check",
        "spec.linkedResourceProviders[0].when", "spec.linkedResourceProviders[0].waitFor"]


def test_default_and_override_are_literal_without_template_enable() -> None:
    assert problems({"default": {"b": "{{ 1 + }}"}, "override": {"c": "{{ 1 + }}"}}) == []


def test_regexes_must_compile() -> None:
    found = problems({"matchIgnore": ["/data/ok", "/data/(unclosed"], "updateFilters": [{"pathMatch": "[x"}]})
    assert [path for path, _ in found] == ["spec.matchIgnore[1]", "spec.updateFilters[0].pathMatch"]
    assert "invalid path regex '/data/(unclosed'" in found[0][1]


def test_mappings_and_lists_where_expected() -> None:
    found = problems({"override": "kind: ConfigMap", "template": {"definition": ["x"]}, "parameters": {"n": 1},
                      "matchIgnore": "/data", "linkedResourceProviders": ["base"]})
    assert [describe(p) for p in found] == [
        "spec.override: must be a mapping, not str", "spec.template.definition: must be a mapping, not list",
        "spec.matchIgnore: must be a list, not str", "spec.parameters: must be a list, not dict",
        "spec.linkedResourceProviders[0]: must be a mapping, not str"]


def test_parameter_without_name_and_non_mapping_schema() -> None:
    assert [describe(p) for p in problems({"parameters": [{"validation": {"openAPIV3Schema": "string"}}]})] == [
        "spec.parameters[0].name: is required",
        "spec.parameters[0].validation.openAPIV3Schema: must be a mapping, not str",
        "spec.parameters[0].validation.openAPIV3Schema: must be a mapping, not str"]


def test_ensure_valid_raises_provider_invalid_naming_provider_and_field() -> None:
    provider = Provider({"metadata": {"name": "p"}, "spec": {"lifespan": {"default": "banana"}, "matchIgnore": ["("]}})
    with pytest.raises(ProviderInvalid) as caught:
        provider.ensure_valid()
    assert caught.value.reason == "ProviderInvalid"
    assert caught.value.message.startswith("ResourceProvider p is invalid: spec.lifespan.default: invalid interval")
    assert caught.value.message.endswith("(and 1 more problem(s))")
    assert Provider({"metadata": {"name": "ok"}, "spec": {}}).ensure_valid().name == "ok"


def test_status_carries_valid_and_ready_with_observed_generation() -> None:
    ctx = SimpleNamespace(now=datetime(2024, 1, 1, tzinfo=UTC))
    obj = {"metadata": {"name": "p", "generation": 3}, "status": {"other": 1}}
    status = desired_status(obj, [("spec.lifespan.default", "bad")], ctx)
    assert status["other"] == 1
    for type_ in ("Valid", "Ready"):
        condition = cond.get_condition(status["conditions"], type_)
        assert condition["status"] == "False" and condition["reason"] == "InvalidSpec"
        assert condition["message"] == "spec.lifespan.default: bad" and condition["observedGeneration"] == 3
    assert validity([]) == (True, "Valid", "The provider's spec is valid.")
    assert validity([("a", "x")] * 7)[2].endswith("(and 2 more)")


def test_a_queue_policy_must_parse() -> None:
    assert problems({"queue": {"order": "FairShare", "maxPerNamespace": 2}}) == []
    assert problems({"queue": {"maxWait": "0s"}}) == [("spec.queue.maxWait", "must be positive")]

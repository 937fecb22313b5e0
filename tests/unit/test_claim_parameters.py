"""Effective parameter values and their validation messages (docs/behaviour.md#parameters), pure."""

from __future__ import annotations

from poolboy.domain.claim_parameters import evaluate

CTX = {"resource_claim": None, "resource_handle": None, "resource_provider": None}

PARAMS = [
    {"name": "size", "default": {"value": "s"}, "validation": {"openAPIV3Schema": {"type": "string",
                                                                                 "enum": ["s", "m"]}}},
    {"name": "count", "allowUpdate": True,
     "validation": {"openAPIV3Schema": {"type": "integer", "default": 1},
                    "checks": [{"name": "small", "check": "value < 5"},
                               {"name": "sane", "check": "value > size | int"}]}},
    {"name": "owner", "required": True},
]


def _eval(spec: dict | None, status: dict | None = None, params: list | None = None):
    return evaluate(params or PARAMS, spec, status, context_variables=CTX)


def test_defaults_apply_in_order_spec_status_template_value_schema() -> None:
    params = [{"name": "a", "default": {"template": "{{ 1 + 1 }}", "value": "v"}},
              {"name": "b", "default": {"value": "v"}},
              {"name": "c", "validation": {"openAPIV3Schema": {"default": 7}}},
              {"name": "d", "default": {"value": "x"}}]
    outcome = _eval({"d": "given"}, None, params)
    assert outcome.values == {"a": "2", "b": "v", "c": 7, "d": "given"}
    assert _eval({}, {"a": "kept", "b": "v", "c": 7, "d": "x"}, params).values["a"] == "kept"


def test_required_message() -> None:
    assert _eval({}).errors == ["Parameter owner is required."]


def test_schema_message() -> None:
    errors = _eval({"owner": "me", "size": "xl"}).errors
    assert len(errors) == 1 and errors[0].startswith("Parameter size schema validation failed: ")


def test_check_message_and_exception_message() -> None:
    assert _eval({"owner": "me", "count": 9}).errors == ["Parameter count failed check: small"]
    params = [{"name": "x", "validation": {"checks": [{"name": "boom", "check": "value.nope()"}]}}]
    errors = _eval({"x": 1}, None, params).errors
    assert len(errors) == 1 and errors[0].startswith("Parameter x exception on check boom: ")


def test_exception_message_embeds_only_the_exception_text() -> None:
    """docs/behaviour.md#parameters: ``Parameter <X> exception on check <name>: <text>``, <text> being the exception's
    own."""
    params = [{"name": "x", "validation": {"checks": [{"name": "boom", "check": "value / 0"}]}}]
    assert _eval({"x": 1}, None, params).errors == ["Parameter x exception on check boom: division by zero"]


def test_immutability_only_after_accepted_values_exist() -> None:
    status = {"size": "s", "count": 1, "owner": "me"}
    assert _eval({"owner": "me", "size": "m"}, status).errors == ["Parameter size is immutable."]
    assert _eval({"owner": "me", "size": "m"}, None).errors == []
    assert _eval({"owner": "me", "count": 2}, status).errors == []


def test_value_equal_to_status_is_valid_even_if_rules_changed() -> None:
    status = {"size": "xl", "count": 1, "owner": "me"}
    assert _eval({"owner": "me", "size": "xl"}, status).errors == []


def test_unknown_parameter_unless_equal_to_status() -> None:
    assert _eval({"owner": "me", "zone": "eu"}).errors == ["No such parameter zone."]
    outcome = _eval({"owner": "me", "zone": "eu"}, {"owner": "me", "size": "s", "count": 1, "zone": "eu"})
    assert outcome.errors == [] and outcome.values["zone"] == "eu"


def test_errors_never_return_values() -> None:
    outcome = _eval({"owner": "me", "size": "xl"})
    assert outcome.values == {} and not outcome.valid


def test_default_added_later_is_not_immutable() -> None:
    params = [*PARAMS, {"name": "zone", "default": {"value": "eu"}}]
    outcome = _eval({"owner": "me"}, {"owner": "me", "size": "s", "count": 1}, params)
    assert outcome.errors == [] and outcome.values["zone"] == "eu"

"""Claim template validation messages (docs/behaviour.md#resource-validation), pure."""

from __future__ import annotations

from poolboy.domain.claim_validation import validate_template

CTX = {"resource_claim": None, "resource_handle": None, "resource_provider": None}
SCHEMA = {"type": "object", "additionalProperties": False,
          "properties": {"spec": {"type": "object", "properties": {"count": {"type": "integer", "minimum": 1}}}}}


def test_valid_template_gives_none() -> None:
    validation = {"openAPIV3Schema": SCHEMA, "checks": [{"name": "few", "check": "spec.count < 3"}]}
    assert validate_template({"spec": {"count": 2}}, validation, context_variables=CTX) is None


def test_schema_violation_gives_validator_message() -> None:
    message = validate_template({"spec": {"count": 0}}, {"openAPIV3Schema": SCHEMA}, context_variables=CTX)
    assert message and "count" in message


def test_additional_properties_false_is_honoured() -> None:
    assert validate_template({"other": 1}, {"openAPIV3Schema": SCHEMA}, context_variables=CTX)


def test_false_check_message() -> None:
    validation = {"checks": [{"name": "few", "check": "spec.count < 3"}]}
    assert validate_template({"spec": {"count": 5}}, validation, context_variables=CTX) == \
        "Validation check failed: few"


def test_raising_check_message() -> None:
    validation = {"checks": [{"name": "boom", "check": "spec.count.nope()"}]}
    message = validate_template({"spec": {"count": 5}}, validation, context_variables=CTX)
    assert message is not None and message.startswith('Validation check "boom" failed with exception: ')


def test_raising_check_message_embeds_only_the_exception_text() -> None:
    """docs/behaviour.md#resource-validation: ``Validation check "<name>" failed with exception: <text>``, <text> being
    the exception's own."""
    validation = {"checks": [{"name": "boom", "check": "spec.count / 0"}]}
    assert validate_template({"spec": {"count": 5}}, validation, context_variables=CTX) == \
        'Validation check "boom" failed with exception: division by zero'


def test_check_sees_template_vars() -> None:
    validation = {"checks": [{"name": "limit", "check": "spec.count <= max_count | int"}]}
    assert validate_template({"spec": {"count": 5}}, validation, context_variables=CTX,
                             template_vars={"max_count": "4"}) == "Validation check failed: limit"

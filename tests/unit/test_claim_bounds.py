"""The claim bounds (docs/behaviour.md#claim-bounds): each limit refuses one past it and lets the claim at it pass."""

from __future__ import annotations

from typing import Any

import pytest

from poolboy.domain import claim_bounds
from poolboy.domain.claim_bounds import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_RESOURCES, check, nesting_depth
from poolboy.result import PermanentError


def nested(levels: int) -> Any:
    """``levels`` mappings one in another around a string."""
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def template(**data: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": data}


def refusal(spec: dict[str, Any]) -> PermanentError:
    with pytest.raises(PermanentError) as caught:
        check(spec)
    assert caught.value.reason == claim_bounds.REASON
    return caught.value


@pytest.mark.parametrize(("value", "depth"), [
    ("x", 0), ({}, 1), ([], 1), ({"a": [1, {"b": 2}]}, 3), ([[[[]]]], 4), (nested(7), 7),
])
def test_nesting_depth_counts_mappings_and_lists(value: Any, depth: int) -> None:
    assert nesting_depth(value, 50) == depth


def test_nesting_depth_stops_past_the_limit_without_recursion() -> None:
    assert nesting_depth(nested(100_000), 10) == 11  # recursion would fail long before 100 000 levels


def test_a_claim_at_every_limit_passes() -> None:
    per_resource = MAX_DOCUMENT_BYTES // MAX_RESOURCES - 100
    check({"resources": [{"template": template(blob="z" * per_resource)} for _ in range(MAX_RESOURCES)]})
    check({"provider": {"name": "p", "parameterValues": {"doc": nested(MAX_DEPTH - 1)}}})


def test_one_resource_more_than_the_limit_is_refused() -> None:
    error = refusal({"resources": [{"template": template()} for _ in range(MAX_RESOURCES + 1)]})
    assert error.message == "spec.resources lists 101 resources; a claim may list at most 100."


def test_parameter_values_one_level_too_deep_are_refused() -> None:
    error = refusal({"provider": {"name": "p", "parameterValues": {"doc": nested(MAX_DEPTH)}}})
    assert error.message.startswith("spec.provider.parameterValues is nested more than 100 levels deep")


def test_a_template_too_deep_is_named_by_its_index() -> None:
    error = refusal({"resources": [{"template": template()}, {"template": template(deep=nested(MAX_DEPTH))}]})
    assert error.message.startswith("spec.resources[1].template is nested more than 100 levels deep")


def test_documents_too_large_together_are_refused_with_their_size() -> None:
    half = {"template": template(blob="y" * (MAX_DOCUMENT_BYTES // 2))}
    error = refusal({"resources": [half, half]})
    assert "may bring at most 524288 bytes (512 KiB)" in error.message
    assert len(error.message) < 200  # the size is named, the content never echoed

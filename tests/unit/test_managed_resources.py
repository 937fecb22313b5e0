"""When a resource's name lets a handle run create it before recording its reference (docs/behaviour.md#handles)."""

from __future__ import annotations

import pytest

from poolboy.domain.managed_resources import apply_name, name_is_reproducible


@pytest.mark.parametrize("metadata, reproducible", [
    ({}, True),  # the default name: guid<index>-<guid>
    ({"generateName": "app-"}, True),  # generateName + guid
    ({"name": "bench-k3x9q"}, True),  # the <prefix>-{{ guid }} convention, rendered
    ({"name": "lab-for-alice"}, False),  # from the claim or anything else: recorded before the create
])
def test_a_name_that_carries_the_guid_is_reproducible(metadata: dict, reproducible: bool) -> None:
    definition = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(metadata)}
    apply_name(definition, 0, "k3x9q")
    assert name_is_reproducible(definition, "k3x9q") is reproducible


def test_no_guid_is_never_reproducible() -> None:
    assert not name_is_reproducible({"metadata": {"name": "anything"}}, "")

"""Deterministic handle names and handle bodies for claims (docs/behaviour.md#resources, #handle-creation)."""

from __future__ import annotations

import re

from poolboy.context import Context
from poolboy.domain.handle_factory import handle_body, handle_name
from poolboy.settings import Settings


def test_handle_name_is_guid_plus_five_lowercase_alphanumerics_and_deterministic() -> None:
    name = handle_name("2b1c7a9e-0000-4000-8000-000000000001")
    assert re.fullmatch(r"guid-[a-z0-9]{5}", name)
    assert name == handle_name("2b1c7a9e-0000-4000-8000-000000000001")


def test_handle_name_differs_per_claim_uid_and_per_attempt() -> None:
    names = {handle_name(f"uid-{i}") for i in range(200)}
    assert len(names) >= 199
    assert handle_name("uid-1", 1) != handle_name("uid-1", 0)


def test_handle_body_has_finalizer_labels_and_claim_reference() -> None:
    settings = Settings(operator_namespace="op")
    ctx = Context.without_cluster(settings, "a pure unit test")
    claim = {"metadata": {"name": "c", "namespace": "user", "uid": "u"}}
    body = handle_body(ctx, claim, "guid-abcde", provider_spec={"name": "p", "parameterValues": {}},
                       resources=[{"name": "r"}], lifespan={"end": "2030-01-01T00:00:00Z"})
    d = settings.domain
    assert body["metadata"]["finalizers"] == [d]
    assert body["metadata"]["namespace"] == "op"
    assert body["metadata"]["labels"] == {f"{d}/resource-claim-name": "c", f"{d}/resource-claim-namespace": "user"}
    assert body["spec"]["resourceClaim"] == {"apiVersion": f"{d}/v1", "kind": "ResourceClaim", "name": "c",
                                             "namespace": "user"}
    assert body["spec"]["provider"] == {"name": "p", "parameterValues": {}}
    assert body["spec"]["lifespan"] == {"end": "2030-01-01T00:00:00Z"}

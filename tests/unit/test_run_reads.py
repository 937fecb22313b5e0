"""What a claim run and a handle run name ahead of reading (poolboy.domain.reads): exactly the objects the runs go
on to get, so one round trip can fetch them all."""

from __future__ import annotations

from poolboy.context import Context
from poolboy.domain.reads import claim_reads, handle_reads
from poolboy.settings import Settings

SETTINGS = Settings.from_env(operator_namespace="op")
CTX = Context.without_cluster(SETTINGS, "a pure unit test")
API = SETTINGS.api_version


def test_a_new_claim_names_its_providers_once_each() -> None:
    claim = {"spec": {"resources": [{"provider": {"name": "a"}}, {"provider": {"name": "b"}},
                                    {"provider": {"name": "a"}}, {"template": {}}]}}
    assert claim_reads(CTX, claim) == [(API, "ResourceProvider", "a", "op"), (API, "ResourceProvider", "b", "op")]


def test_a_bound_claim_names_its_provider_handle_and_mirrored_resources() -> None:
    claim = {"spec": {"provider": {"name": "p"}},
             "status": {"resourceHandle": {"name": "guid-x"},
                        "resources": [{"reference": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
                                                     "namespace": "users"}},
                                      {"reference": {"apiVersion": "v1", "kind": "ConfigMap"}},  # not made yet
                                      {}]}}
    assert claim_reads(CTX, claim) == [(API, "ResourceProvider", "p", "op"), (API, "ResourceHandle", "guid-x", "op"),
                                       ("v1", "ConfigMap", "cm", "users")]


def test_a_bound_handle_names_its_claim_the_claims_namespace_providers_and_resources() -> None:
    handle = {"spec": {"resourceClaim": {"apiVersion": API, "name": "c", "namespace": "users"},
                       "resources": [{"provider": {"name": "p"}}]},
              "status": {"resources": [{"reference": {"apiVersion": "example.com/v1", "kind": "Widget",
                                                      "name": "w", "namespace": "users"}}]}}
    assert handle_reads(CTX, handle) == [(API, "ResourceClaim", "c", "users"), ("v1", "Namespace", "users", None),
                                         (API, "ResourceProvider", "p", "op"),
                                         ("example.com/v1", "Widget", "w", "users")]


def test_a_pool_handle_has_no_claim_to_name() -> None:
    handle = {"spec": {"resources": [{"provider": {"name": "p"}}]}}
    assert handle_reads(CTX, handle) == [(API, "ResourceProvider", "p", "op")]

"""The benchmark workload's objects, identical in every run (and the same shape as the upstream reference run).

* the managed resource is a namespaced custom resource (``BenchItem``) whose CRD the benchmark creates at runtime;
* one provider with ``template.enable``, an OpenAPI schema requiring a string ``spec.value``, a ``default`` that
  fills apiVersion, kind and namespace into claim templates, and an override naming the resource
  ``<provider>-{{ guid }}``;
* claims in their own namespace with ``resources[0] = {provider: {name}, template: {spec: {value: foo}}}``;
* a pool whose template is what a claim's template becomes after initialisation (default applied), so a claim
  matches a pool handle with an empty diff.
"""

from __future__ import annotations

D = "poolboy.gpte.redhat.com"
API = f"{D}/v1"
OPERATOR_NS = "poolboy"
CLAIM_NS = "bench"
PROVIDER = "bench"
ITEM_GROUP = "bench.example.com"


def item_crd() -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"benchitems.{ITEM_GROUP}"},
        "spec": {
            "group": ITEM_GROUP, "scope": "Namespaced",
            "names": {"plural": "benchitems", "singular": "benchitem", "kind": "BenchItem"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def provider() -> dict:
    return {
        "apiVersion": API, "kind": "ResourceProvider",
        "metadata": {"name": PROVIDER, "namespace": OPERATOR_NS},
        "spec": {
            "match": {"apiVersion": f"{ITEM_GROUP}/v1", "kind": "BenchItem"},
            "template": {"enable": True},
            "default": {"apiVersion": f"{ITEM_GROUP}/v1", "kind": "BenchItem",
                        "metadata": {"namespace": CLAIM_NS}},
            "validation": {"openAPIV3Schema": {
                "type": "object", "required": ["spec"],
                "properties": {"spec": {"type": "object", "required": ["value"],
                                        "properties": {"value": {"type": "string"}}}}}},
            "override": {"metadata": {"name": PROVIDER + "-{{ guid }}"}},
            "healthCheck": "true", "readinessCheck": "true",
        },
    }


def initialised_template() -> dict:
    """A claim's template after initialisation: its ``spec.value`` plus the provider's ``default``."""
    return {"apiVersion": f"{ITEM_GROUP}/v1", "kind": "BenchItem", "metadata": {"namespace": CLAIM_NS},
            "spec": {"value": "foo"}}


def pool(min_available: int) -> dict:
    return {
        "apiVersion": API, "kind": "ResourcePool", "metadata": {"name": PROVIDER, "namespace": OPERATOR_NS},
        "spec": {"minAvailable": min_available, "resources": [{
            "provider": {"apiVersion": API, "kind": "ResourceProvider", "name": PROVIDER,
                         "namespace": OPERATOR_NS},
            "template": initialised_template()}]},
    }


def claim(name: str) -> dict:
    """Only ``spec.value``: the provider's ``default`` fills apiVersion, kind and namespace at initialisation."""
    return {"apiVersion": API, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": CLAIM_NS},
            "spec": {"resources": [{"provider": {"name": PROVIDER}, "template": {"spec": {"value": "foo"}}}]}}

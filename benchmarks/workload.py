"""The benchmark workload's objects, identical in every run, in two shapes (``--shape``).

Both shapes manage a namespaced custom resource (``BenchItem``) whose CRD the benchmark creates at runtime, so
the operator finds it through discovery, and name it ``<provider>-{{ guid }}`` through the provider's override.

* ``upstream`` (default): shaped like upstream Poolboy's own test provider, so the same objects run on the
  project and on upstream Poolboy v1.17.3. The provider's ``override`` carries the whole identity of the resource
  (apiVersion, kind, ``metadata.name: bench-{{ guid }}``, the claim namespace), ``template.enable: true``, and
  ``validation.openAPIV3Schema`` with ``additionalProperties: false`` and a required string ``spec.value``; no
  ``default``, no checks. The claim namespace is annotated ``openshift.io/requester``, so every claim pays for
  the requester lookup as it does on OpenShift. The pool's template is the claim's template.
* ``benchitem``: the project's earlier shape: a ``default`` fills apiVersion, kind and namespace into the claim's
  template at initialisation, an open schema, ``healthCheck``/``readinessCheck`` ``true``; the pool's template is
  what a claim's template becomes after initialisation.

In both, claims carry ``resources[0] = {provider: {name}, template: {spec: {value: foo}}}`` and match a pool
handle with an empty diff.
"""

from __future__ import annotations

from dataclasses import dataclass

D = "poolboy.gpte.redhat.com"
API = f"{D}/v1"
OPERATOR_NS = "poolboy"
CLAIM_NS = "bench"
PROVIDER = "bench"
ITEM_GROUP = "bench.example.com"
ITEM_API = f"{ITEM_GROUP}/v1"
REQUESTER = "bench-user"
SHAPES = ("upstream", "benchitem")


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


def namespace(name: str, annotations: dict[str, str] | None = None) -> dict:
    metadata: dict = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def _value_schema(closed: bool) -> dict:
    """A required string ``spec.value``; ``closed`` forbids any other property (as upstream's test provider)."""
    spec = {"type": "object", "required": ["value"], "properties": {"value": {"type": "string"}}}
    schema = {"type": "object", "required": ["spec"], "properties": {"spec": spec}}
    if closed:
        spec["additionalProperties"] = False
        schema["additionalProperties"] = False
    return schema


def _claim_template() -> dict:
    return {"spec": {"value": "foo"}}


@dataclass(frozen=True)
class Workload:
    """The objects of one shape: provider, pool, claims and the claim namespace."""

    shape: str = "upstream"

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"unknown shape {self.shape!r}; one of {', '.join(SHAPES)}")

    def claim_namespace(self) -> dict:
        return namespace(CLAIM_NS, {"openshift.io/requester": REQUESTER} if self.shape == "upstream" else None)

    def provider(self) -> dict:
        spec: dict = {"template": {"enable": True},
                      "validation": {"openAPIV3Schema": _value_schema(closed=self.shape == "upstream")}}
        if self.shape == "upstream":
            spec["override"] = {"apiVersion": ITEM_API, "kind": "BenchItem",
                                "metadata": {"name": PROVIDER + "-{{ guid }}", "namespace": CLAIM_NS}}
        else:
            spec |= {"match": {"apiVersion": ITEM_API, "kind": "BenchItem"},
                     "default": {"apiVersion": ITEM_API, "kind": "BenchItem", "metadata": {"namespace": CLAIM_NS}},
                     "override": {"metadata": {"name": PROVIDER + "-{{ guid }}"}},
                     "healthCheck": "true", "readinessCheck": "true"}
        return {"apiVersion": API, "kind": "ResourceProvider",
                "metadata": {"name": PROVIDER, "namespace": OPERATOR_NS}, "spec": spec}

    def pool_template(self) -> dict:
        """What a claim's template is when it is compared with a pool handle's: itself in the upstream shape,
        with the provider's ``default`` applied in the BenchItem shape."""
        if self.shape == "upstream":
            return _claim_template()
        return {"apiVersion": ITEM_API, "kind": "BenchItem", "metadata": {"namespace": CLAIM_NS}, **_claim_template()}

    def pool(self, min_available: int) -> dict:
        return {
            "apiVersion": API, "kind": "ResourcePool", "metadata": {"name": PROVIDER, "namespace": OPERATOR_NS},
            "spec": {"minAvailable": min_available, "resources": [{
                "provider": {"apiVersion": API, "kind": "ResourceProvider", "name": PROVIDER,
                             "namespace": OPERATOR_NS},
                "template": self.pool_template()}]},
        }

    def claim(self, name: str) -> dict:
        return {"apiVersion": API, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": CLAIM_NS},
                "spec": {"resources": [{"provider": {"name": PROVIDER}, "template": _claim_template()}]}}

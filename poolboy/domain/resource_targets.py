"""Where a claim's own template may send a resource (docs/security.md#6-poolboy-acts-only-on-what-it-made).

A claim in the explicit form (``spec.resources[].template``) writes the resource's definition itself, and Poolboy
creates it with rights the user does not have. So the namespace and the scope the user writes are bounded by the
provider: a claim's template places a resource in the claim's own namespace, or in one the provider names — pinned by
its ``override``, given by its ``default``, or allowed by ``spec.allowedTargets`` — and makes a cluster-scoped object
only when the provider pins that kind in its ``override`` or sets ``allowedTargets.clusterScoped``.

``allowedTargets`` (a provider field beyond upstream)::

    allowedTargets:
      namespaces: [shared-tools]          # these namespaces, besides the claim's own
      namespaceSelector:                  # namespaces whose labels match (a Kubernetes label selector)
        matchLabels: {poolboy.gpte.redhat.com/claims-allowed: "true"}
      anyNamespace: false                 # true: any namespace, as upstream Poolboy allows
      clusterScoped: false                # true: cluster-scoped kinds too, as upstream Poolboy allows

Pure: the namespace labels and the kind's scope are looked up by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: the labels of a namespace by name (None: no such namespace)
NamespaceLabels = Callable[[str], Mapping[str, str] | None]

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class TargetPolicy:
    """A provider's ``spec.allowedTargets``."""

    namespaces: tuple[str, ...] = ()
    namespace_selector: Mapping[str, Any] | None = None
    any_namespace: bool = False
    cluster_scoped: bool = False

    @classmethod
    def of(cls, spec: Mapping[str, Any] | None) -> TargetPolicy:
        targets = (spec or {}).get("allowedTargets") or {}
        return cls(namespaces=tuple(str(n) for n in targets.get("namespaces") or ()),
                   namespace_selector=targets.get("namespaceSelector") or None,
                   any_namespace=bool(targets.get("anyNamespace")),
                   cluster_scoped=bool(targets.get("clusterScoped")))

    def allows_namespace(self, namespace: str, labels_of: NamespaceLabels) -> bool:
        if self.any_namespace or namespace in self.namespaces:
            return True
        if not self.namespace_selector:
            return False
        labels = labels_of(namespace)
        return labels is not None and selector_matches(self.namespace_selector, labels)

    def describe(self, claim_namespace: str) -> str:
        """What the policy allows, in the words of a refusal."""
        places = [f"the claim's namespace {claim_namespace}", *self.namespaces]
        if self.namespace_selector:
            places.append(f"namespaces matching {dict(self.namespace_selector)}")
        return ", ".join(places[:-1]) + " or " + places[-1] if len(places) > 1 else places[0]


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A Kubernetes ``LabelSelector`` (``matchLabels`` and ``matchExpressions``) against ``labels``."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_expression_matches(e, labels) for e in selector.get("matchExpressions") or [])


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expression.get("key")), str(expression.get("operator"))
    present = key in labels
    inside = present and labels[key] in (expression.get("values") or [])
    return {"In": inside, "NotIn": not inside, "Exists": present, "DoesNotExist": not present}.get(operator, False)


def selector_problem(selector: Any) -> str | None:
    """Why ``selector`` is not a label selector this module evaluates, or None (a provider's own spec check)."""
    if selector is None:
        return None
    if not isinstance(selector, Mapping):
        return "must be a label selector"
    for expression in selector.get("matchExpressions") or []:
        if not isinstance(expression, Mapping) or expression.get("operator") not in _OPERATORS:
            return f"matchExpressions operator must be one of {', '.join(_OPERATORS)}"
    return None


def _metadata(template: Mapping[str, Any] | None) -> Mapping[str, Any]:
    metadata = (template or {}).get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def refusal(template: Mapping[str, Any] | None, *, claim_namespace: str, provider_name: str, policy: TargetPolicy,
            override: Mapping[str, Any] | None, default: Mapping[str, Any] | None, namespaced: bool | None,
            labels_of: NamespaceLabels) -> str | None:
    """Why a claim's ``template`` may not be created where it says, or None when it may.

    ``override`` is the provider's (unrendered: a key it sets pins the field whatever it renders to), ``default`` its
    rendered default (a value equal to it is the provider's), ``namespaced`` the final kind's scope (None: unknown,
    the handle reports a missing API)."""
    override = override or {}
    if namespaced is False:
        chosen_kind = "kind" not in override and (template or {}).get("kind") != (default or {}).get("kind")
        if chosen_kind and not policy.cluster_scoped:
            return (f"{(template or {}).get('kind')} is cluster-scoped and ResourceProvider {provider_name} does not "
                    f"allow cluster-scoped resources (allowedTargets.clusterScoped)")
        return None
    namespace = _metadata(template).get("namespace")
    if not namespace or "namespace" in _metadata(override) or namespace == claim_namespace \
            or namespace == _metadata(default).get("namespace"):
        return None
    if policy.allows_namespace(str(namespace), labels_of):
        return None
    return (f"metadata.namespace {namespace}: ResourceProvider {provider_name} places resources in "
            f"{policy.describe(claim_namespace)} only (allowedTargets)")

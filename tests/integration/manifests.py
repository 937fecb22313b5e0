"""Object bodies more than one integration test module creates."""

from __future__ import annotations


def crd(group: str, kind: str) -> dict:
    """A namespaced ``<group>/v1`` CRD that keeps any fields: a kind the cluster does not know until created, for
    tests of discovery at run time (the kube client's and the watcher's managed-resource informers)."""
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": kind.lower()},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }

"""The examples' namespaces, provider and pool on a running stack, and claims against the example provider: what the
stack tests that only need "a claim binds" share."""

from __future__ import annotations

import contextlib
from pathlib import Path

import yaml

from poolboy.kube import AlreadyExists, KubeClient

D = "poolboy.gpte.redhat.com"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def apply_examples(kube: KubeClient) -> None:
    """``examples/0*``–``2*``: the demo namespace, the provider ``hello`` and its pool."""
    for manifest in sorted(EXAMPLES.glob("[012]*.yaml")):
        for doc in yaml.safe_load_all(manifest.read_text()):
            with contextlib.suppress(AlreadyExists):
                kube.create(doc)


def create_claim(kube: KubeClient, name: str) -> None:
    """A claim in ``demo`` against the example provider."""
    kube.create({"apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "demo"},
                 "spec": {"provider": {"name": "hello", "parameterValues": {"greeting": name}}}})


def claim_ready(kube: KubeClient, name: str) -> bool:
    found = kube.get(f"{D}/v1", "ResourceClaim", name, "demo")
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

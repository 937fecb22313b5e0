"""Garbage collection by ownerReferences: Background, Foreground and Orphan propagation.

Poolboy sets one owner reference (a scaling's, to its pool), and a provider's templates may set others on the
resources they create; the real cluster's garbage collector deletes (or orphans) dependents, and devcluster must
reach the same outcome.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.devcluster.kube import Objects, expect_error
from tests.waiting import wait_for

HOLD = "conformance.test/hold"


@pytest.fixture()
def objects(widget_objects: Objects) -> Objects:
    return widget_objects


def owner_ref(owner: dict[str, Any], block: bool = False) -> dict[str, Any]:
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"]}
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


def family(objects: Objects, core: client.CoreV1Api, block: bool = False) -> dict[str, Any]:
    """An owner Widget with a dependent Widget and a dependent ConfigMap."""
    owner = objects.create(objects.crd.body("owner"))
    objects.create(objects.crd.body("child", ownerReferences=[owner_ref(owner, block)]))
    core.create_namespaced_config_map(objects.namespace, {"metadata": {
        "name": "child-cm", "ownerReferences": [owner_ref(owner, block)]}})
    return owner


def configmap_gone(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    return bool(expect_error(404, core.read_namespaced_config_map, name, namespace))


def test_background_deletion_collects_dependents(objects: Objects, core: client.CoreV1Api) -> None:
    family(objects, core)
    objects.delete("owner", propagation_policy="Background")
    assert objects.gone("owner")
    wait_for(lambda: objects.gone("child"), timeout=10, message="dependent widget collected")
    wait_for(lambda: configmap_gone(core, objects.namespace, "child-cm"), timeout=10,
             message="dependent configmap collected")


def test_default_propagation_is_background(objects: Objects, core: client.CoreV1Api) -> None:
    family(objects, core)
    objects.delete("owner")
    assert objects.gone("owner")
    wait_for(lambda: objects.gone("child"), timeout=10, message="dependent widget collected")


def test_foreground_deletion_waits_for_dependents(objects: Objects, core: client.CoreV1Api) -> None:
    owner = family(objects, core, block=True)
    objects.patch("child", {"metadata": {"finalizers": [HOLD]}})
    returned = objects.delete("owner", propagation_policy="Foreground")
    assert "foregroundDeletion" in returned["metadata"]["finalizers"]
    assert returned["metadata"]["deletionTimestamp"]
    wait_for(lambda: objects.get("child")["metadata"].get("deletionTimestamp"), timeout=10,
             message="dependent marked for deletion")
    wait_for(lambda: configmap_gone(core, objects.namespace, "child-cm"), timeout=10, message="configmap collected")
    # The held dependent blocks its owner: the owner is still there, being deleted.
    held_owner = objects.get("owner")
    assert held_owner["metadata"]["uid"] == owner["metadata"]["uid"]
    assert "foregroundDeletion" in held_owner["metadata"]["finalizers"]
    objects.patch("child", {"metadata": {"finalizers": None}})
    wait_for(lambda: objects.gone("child"), timeout=10, message="dependent deleted")
    wait_for(lambda: objects.gone("owner"), timeout=10, message="owner deleted after its dependents")


def test_orphan_deletion_keeps_dependents_and_drops_owner_reference(objects: Objects,
                                                                    core: client.CoreV1Api) -> None:
    family(objects, core)
    objects.delete("owner", propagation_policy="Orphan")
    wait_for(lambda: objects.gone("owner"), timeout=10, message="owner deleted")
    wait_for(lambda: not objects.get("child")["metadata"].get("ownerReferences"), timeout=10,
             message="owner reference removed from orphan")
    cm = core.read_namespaced_config_map("child-cm", objects.namespace)
    assert not cm.metadata.owner_references
    assert objects.exists("child")


def test_dependent_with_another_live_owner_survives(objects: Objects, core: client.CoreV1Api) -> None:
    first = objects.create(objects.crd.body("first"))
    second = objects.create(objects.crd.body("second"))
    objects.create(objects.crd.body("shared", ownerReferences=[owner_ref(first), owner_ref(second)]))
    objects.delete("first")
    wait_for(lambda: [r["name"] for r in objects.get("shared")["metadata"]["ownerReferences"]] == ["second"],
             timeout=10, message="dangling owner reference removed")
    objects.delete("second")
    wait_for(lambda: objects.gone("shared"), timeout=10, message="collected once its last owner went")


def test_dependent_of_nonexistent_owner_is_collected(objects: Objects) -> None:
    ghost = {"apiVersion": objects.crd.api_version, "kind": objects.crd.kind, "metadata": {
        "name": "ghost", "uid": "00000000-0000-0000-0000-00000000dead"}}
    objects.create(objects.crd.body("orphan", ownerReferences=[owner_ref(ghost)]))
    wait_for(lambda: objects.gone("orphan"), timeout=10, message="dependent of a missing owner collected")

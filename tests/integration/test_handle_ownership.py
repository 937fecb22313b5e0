"""A handle acts only on objects it made (docs/security.md#6-poolboy-acts-only-on-what-it-made): an object already at
a rendered name is adopted only with this handle's mark (its uid, or upstream's name and namespace marks) or an
administrator's explicit reference; any other is neither patched, shown nor deleted, and the handle says so."""

from __future__ import annotations

from typing import Any

from poolboy.result import PermanentError
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv

henv = support.henv  # the fixture


def _someone_elses(henv: HandleEnv, name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return henv.kube.create({"apiVersion": "v1", "kind": "ConfigMap", "data": {"owner": "another app"},
                             "metadata": {"name": name, "namespace": henv.ns, "annotations": annotations or {}}})


def _synced(henv: HandleEnv, name: str) -> dict[str, Any]:
    conditions = (henv.get_handle(name).get("status") or {}).get("conditions") or []
    return next(c for c in conditions if c["type"] == "Synced")


def _unchanged(henv: HandleEnv, before: dict[str, Any]) -> bool:
    after = henv.configmap(before["metadata"]["name"])
    return after is not None and after["metadata"]["uid"] == before["metadata"]["uid"] \
        and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_an_unmarked_object_at_the_rendered_name_is_not_adopted(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", updateFilters=[{"pathMatch": "/data/.*"}])
    theirs = _someone_elses(henv, "guid0-taken")
    henv.resources_handle("guid-taken", "cm", {"data": {"owner": "poolboy"}})
    outcome = henv.outcome(henv.converge("handle", "guid-taken"), "handle", "guid-taken")
    assert isinstance(outcome, PermanentError) and outcome.reason == "ResourceConflict"
    assert _unchanged(henv, theirs), "neither its data nor its annotations were patched"
    synced = _synced(henv, "guid-taken")
    assert (synced["status"], synced["reason"]) == ("False", "ResourceConflict")
    assert f"ConfigMap guid0-taken in namespace {henv.ns}" in synced["message"]
    assert "reference" not in henv.get_handle("guid-taken")["status"]["resources"][0], "nothing of it recorded"
    assert any(e["reason"] == "ResourceConflict" and e["type"] == "Warning" for e in henv.events("guid-taken"))


def test_an_object_of_another_handle_is_not_adopted(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", override={"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "shared", "namespace": henv.ns}})
    henv.resources_handle("guid-first", "cm")
    henv.converge("handle", "guid-first")
    first = henv.configmap("shared")
    henv.resources_handle("guid-secnd", "cm")
    outcome = henv.outcome(henv.converge("handle", "guid-secnd"), "handle", "guid-secnd")
    assert isinstance(outcome, PermanentError) and outcome.reason == "ResourceConflict"
    assert "belongs to ResourceHandle guid-first" in outcome.message
    assert _unchanged(henv, first)


def test_an_object_with_upstreams_marks_for_this_handle_is_adopted(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    marks = {f"{henv.d}/resource-handle-name": "guid-upstr", f"{henv.d}/resource-handle-namespace": henv.op}
    theirs = _someone_elses(henv, "guid0-upstr", marks)
    handle = henv.resources_handle("guid-upstr", "cm")
    henv.converge("handle", "guid-upstr")
    adopted = henv.configmap("guid0-upstr")
    assert adopted["metadata"]["uid"] == theirs["metadata"]["uid"]
    assert adopted["metadata"]["annotations"][f"{henv.d}/resource-handle-uid"] == handle["metadata"]["uid"]
    assert _synced(henv, "guid-upstr")["status"] == "True"


def test_an_object_an_administrator_references_in_the_handle_is_adopted(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    theirs = _someone_elses(henv, "legacy-app")
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "legacy-app", "namespace": henv.ns}
    henv.handle("guid-admin", {"resources": [{"provider": henv.provider_ref("cm"), "reference": reference}]})
    henv.converge("handle", "guid-admin")
    adopted = henv.configmap("legacy-app")
    assert adopted["metadata"]["uid"] == theirs["metadata"]["uid"]
    assert adopted["metadata"]["annotations"][f"{henv.d}/resource-handle-name"] == "guid-admin"
    assert henv.get_handle("guid-admin")["status"]["resources"][0]["reference"] == reference


def test_a_deleted_handle_leaves_an_object_recreated_by_someone_else(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-recr2", "cm")
    henv.converge("handle", "guid-recr2")
    henv.kube.delete("v1", "ConfigMap", "guid0-recr2", henv.ns)
    theirs = _someone_elses(henv, "guid0-recr2")  # the name is free again and another app takes it
    henv.kube.delete(henv.api, "ResourceHandle", "guid-recr2", henv.op)
    henv.reconcile("handle", "guid-recr2")
    assert henv.get_handle("guid-recr2") is None, "the cleanup finished"
    assert _unchanged(henv, theirs), "neither annotated nor deleted"


def test_a_deleted_handle_deletes_what_it_made(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-mine1", "cm")
    henv.converge("handle", "guid-mine1")
    assert henv.configmap("guid0-mine1") is not None
    henv.kube.delete(henv.api, "ResourceHandle", "guid-mine1", henv.op)
    henv.reconcile("handle", "guid-mine1")
    assert henv.get_handle("guid-mine1") is None and henv.configmap("guid0-mine1") is None

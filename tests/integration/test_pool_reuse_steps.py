"""Reuse of a released pool handle one reconcile at a time (docs/pools.md, "Reuse"; docs/behaviour.md#deletion): every
step goes on from what the handle shows, so a run that stops after any write leaves nothing stuck, and the pool
counts the cleaning handle as coming. The handle's ConfigMap is the managed resource; the test plays the janitor.
"""

from __future__ import annotations

from datetime import timedelta

from poolboy.context import utcnow
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv

henv = support.henv  # the fixture

REUSE = {"cleanupPatch": {"data": {"wipe": "{{ resource_handle.status.cleaning.since }}"}},
         "cleanedCheck": "data.wiped | default('') == data.wipe | default('-')", "cleanupTimeout": "30m"}


def _configmap(henv: HandleEnv, handle: str) -> dict:
    ref = (henv.get_handle(handle) or {})["status"]["resources"][0]["reference"]
    found = henv.configmap(ref["name"])
    assert found is not None
    return found


def _bound_pool_handle(henv: HandleEnv) -> str:
    """A pool handle with its ConfigMap, bound by hand to claim ``gone`` (a claim that no longer exists)."""
    henv.configmap_provider("cm", reuse=REUSE, template={"enable": True})
    henv.pool("pool", minAvailable=1, provider={"name": "cm", "parameterValues": {}}, lifespan={"unclaimed": "1h"})
    henv.reconcile("pool", "pool")
    name = henv.pool_handles("pool")[0]["metadata"]["name"]
    henv.reconcile("handle", name)
    henv.kube.patch_merge(henv.api, "ResourceHandle", name, henv.op, {
        "metadata": {"labels": henv.bound_labels("gone")}, "spec": {"resourceClaim": henv.claim_ref("gone"),
                                                                   "lifespan": {"end": "2099-01-01T00:00:00Z"}}})
    henv.reconcile("pool", "pool")  # the pool refills: one other unbound handle
    return name


def test_each_step_goes_on_from_what_the_handle_shows_and_the_pool_counts_it_as_coming(henv: HandleEnv) -> None:
    name = _bound_pool_handle(henv)
    cleaning_label = f"{henv.d}/resource-handle-cleaning"

    # the release alone (a run that stops after it): unbound and unbindable at once, its status not written yet
    henv.reconcile("handle", name)
    released = henv.get_handle(name) or {}
    assert "resourceClaim" not in released["spec"] and released["metadata"]["labels"][cleaning_label] == "true"
    assert "end" not in released["spec"].get("lifespan", {})
    assert released["status"]["state"] == "Running"  # as every run of it showed so far

    # the pool, asked for two, counts it as coming: one unbound + one cleaning, nothing to create
    henv.patch("ResourcePool", "pool", {"spec": {"minAvailable": 2}})
    henv.reconcile("pool", "pool")
    assert len(henv.pool_handles("pool")) == 2
    status = henv.get("ResourcePool", "pool")["status"]
    assert status["resourceHandleCount"]["cleaning"] == 1
    # its scale counts and selects the unbound handle, not the one being cleaned (kubectl get -l, autoscalers)
    selected = henv.kube.list(henv.api, "ResourceHandle", henv.op, label_selector=status["selector"])
    unbound = [h["metadata"]["name"] for h in henv.pool_handles("pool") if h["metadata"]["name"] != name]
    assert status["replicas"] == 1 and [h["metadata"]["name"] for h in selected] == unbound

    # cleaning: the state, the patch applied once, and waiting for the janitor
    henv.reconcile("handle", name)
    handle = henv.get_handle(name) or {}
    assert handle["status"]["state"] == "Cleaning"
    assert handle["status"]["cleaning"]["patched"] is True
    assert handle["status"]["cleaning"]["claim"] == {"namespace": henv.ns, "name": "gone"}
    patched = _configmap(henv, name)
    assert patched["data"]["wipe"] == handle["status"]["cleaning"]["since"]
    henv.reconcile("handle", name)
    assert _configmap(henv, name)["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
    assert (henv.get_handle(name) or {})["status"]["state"] == "Cleaning"

    # the janitor finishes: fresh, and the pool has its two
    henv.kube.patch_merge("v1", "ConfigMap", patched["metadata"]["name"], henv.ns,
                          {"data": {"wiped": patched["data"]["wipe"]}})
    now = utcnow()
    henv.reconcile("handle", name, now=now)
    fresh = henv.get_handle(name) or {}
    assert fresh["status"]["state"] == "Running" and "cleaning" not in fresh["status"]
    assert cleaning_label not in fresh["metadata"]["labels"]
    assert fresh["spec"]["lifespan"]["end"] == support.ts(now + timedelta(hours=1))
    assert sorted(e["reason"] for e in henv.events(name) if e["reason"] in ("Cleaning", "Reused")) == \
        ["Cleaning", "Reused"]
    henv.reconcile("pool", "pool")
    count = henv.get("ResourcePool", "pool")["status"]["resourceHandleCount"]
    assert (count["available"], count["cleaning"]) == (2, 0)

    # a run that stopped after the fresh write but before its status: the next run finishes the status
    henv.patch("ResourceHandle", name, {"status": {"state": "Cleaning", "cleaning": {"since": "x"}}}, status=True)
    henv.reconcile("handle", name)
    assert (henv.get_handle(name) or {})["status"]["state"] == "Running"


def test_a_handle_not_clean_by_its_deadline_is_deleted(henv: HandleEnv) -> None:
    name = _bound_pool_handle(henv)
    henv.reconcile("handle", name)  # released
    henv.reconcile("handle", name)  # cleaning, patched
    henv.reconcile("handle", name, now=utcnow() + timedelta(minutes=31))
    handle = henv.get_handle(name)
    assert handle is None or handle["metadata"].get("deletionTimestamp")
    assert any(e["reason"] == "CleaningFailed" and "cleanupTimeout 30m" in e["message"] for e in henv.events(name))

"""A pool with standby and its handles, run one reconcile at a time (docs/behaviour.md#standby): the standby patch
is applied and stays applied through the handle's own updates (``updateFilters`` allow the path it patches), the
values it replaced are recorded and restored when a claim binds the handle."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from poolboy.context import utcnow
from poolboy.result import Result
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv

henv = support.henv  # the fixture

TEMPLATE = {"data": {"power": "on", "size": "small"}}


def _settle(henv: HandleEnv, rounds: int = 3) -> None:
    """The pool and each of its handles, in turn, as the work queue would run them."""
    for _ in range(rounds):
        henv.reconcile("pool", "vms")
        for handle in henv.pool_handles("vms"):
            henv.reconcile("handle", handle["metadata"]["name"])


def _power(henv: HandleEnv, handle: dict) -> str:
    configmap = henv.configmap(handle["status"]["resources"][0]["reference"]["name"])
    assert configmap is not None
    return str(configmap["data"]["power"])


def test_standby_patch_holds_through_updates_and_a_bind_restores_what_it_replaced(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", updateFilters=[{"pathMatch": "/data/.*"}], readinessCheck="data is defined")
    henv.pool("vms", minAvailable=2, resources=[{"provider": {"name": "cm"}, "template": TEMPLATE}],
              standby={"running": 1, "patch": {"data": {"power": "{{ 'o' ~ 'ff' }}"}}})
    _settle(henv)

    handles = {h["status"].get("state"): h for h in henv.pool_handles("vms")}
    assert set(handles) == {"Running", "Standby"}
    running, standby = handles["Running"], handles["Standby"]
    assert (running["spec"]["standby"], standby["spec"]["standby"]) == (False, True)
    assert _power(henv, running) == "on"
    assert _power(henv, standby) == "off"  # rendered from the template
    assert standby["status"]["standby"]["restore"] == [{"data": {"power": "on"}}]
    assert standby["status"]["ready"] is False
    counts = henv.get("ResourcePool", "vms")["status"]["resourceHandleCount"]
    assert (counts["running"], counts["standby"]) == (1, 1)

    _settle(henv)  # the handle's own updates render the patch too: nothing undoes it
    assert _power(henv, henv.get("ResourceHandle", standby["metadata"]["name"])) == "off"
    assert any(e["reason"] == "Standby" for e in henv.events(standby["metadata"]["name"]))

    # a claim takes the running handle; the next binds the one on standby, which resumes: restored, then Running
    for claim in ("first", "second"):
        henv.claim(claim, {"resources": [{"provider": {"name": "cm"}, "template": TEMPLATE}]})
        henv.converge("claim", claim)
    first = henv.get("ResourceClaim", "first", henv.ns)["status"]["resourceHandle"]["name"]
    second = henv.get("ResourceClaim", "second", henv.ns)["status"]["resourceHandle"]["name"]
    assert (first, second) == (running["metadata"]["name"], standby["metadata"]["name"])
    henv.reconcile("handle", second)
    resumed = henv.get("ResourceHandle", second)
    assert resumed["status"]["state"] == "Running"
    assert "standby" not in resumed["status"] and "resuming" not in resumed["status"]
    assert resumed["status"]["resumedAt"]  # its Ready time is no measure of the pool's time to ready
    assert _power(henv, resumed) == "on"
    assert {"Resuming", "Resumed"} <= {e["reason"] for e in henv.events(second)}


def test_an_unbound_handle_that_does_not_resume_in_time_is_replaced_by_the_pool(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", readinessCheck="data is defined")
    henv.pool("vms", minAvailable=2, resources=[{"provider": {"name": "cm"}, "template": TEMPLATE}],
              standby={"running": 1, "patch": {"data": {"power": "off"}}})
    _settle(henv)
    stuck = next(h for h in henv.pool_handles("vms") if h["status"].get("state") == "Running")["metadata"]["name"]
    henv.patch("ResourceHandle", stuck, {"status": {"state": "Resuming", "ready": False, "resuming": {
        "since": "2020-01-01T00:00:00Z", "deadline": "2020-01-01T00:10:00Z"}}}, status=True)
    henv.reconcile("pool", "vms")
    assert henv.get("ResourceHandle", stuck) is None or henv.get("ResourceHandle", stuck)["metadata"].get(
        "deletionTimestamp")
    assert any(e["reason"] == "ResumeTimeout" and stuck in e["message"] for e in henv.events("vms"))
    _settle(henv)
    assert len(henv.pool_handles("vms")) == 2  # replaced


def test_a_handle_the_pool_asks_back_on_standby_while_it_resumes_goes_there_once_resumed(henv: HandleEnv) -> None:
    """The pool changes its mind while a handle resumes (another handle it keeps running came back): the run that
    finds it resumed asks for one more run, which puts it on standby; nothing else would wake it."""
    henv.configmap_provider("cm", updateFilters=[{"pathMatch": "/data/.*"}], readinessCheck="data is defined")
    henv.pool("vms", minAvailable=1, resources=[{"provider": {"name": "cm"}, "template": TEMPLATE}],
              standby={"running": 0, "patch": {"data": {"power": "off"}}, "resumedCheck": "binaryData is defined"})
    _settle(henv)
    (handle,) = henv.pool_handles("vms")
    name = handle["metadata"]["name"]
    assert handle["status"]["state"] == "Standby"
    henv.patch("ResourceHandle", name, {"spec": {"standby": False}})  # the pool asks it to run
    henv.reconcile("handle", name)
    assert henv.get("ResourceHandle", name)["status"]["state"] == "Resuming"
    henv.patch("ResourceHandle", name, {"spec": {"standby": True}})  # and asks it back before it has resumed
    henv.reconcile("handle", name)
    assert henv.get("ResourceHandle", name)["status"]["state"] == "Resuming"
    configmap = henv.get("ResourceHandle", name)["status"]["resources"][0]["reference"]["name"]
    henv.kube.patch_merge("v1", "ConfigMap", configmap, henv.ns, {"binaryData": {"booted": "eWVz"}})
    resumed = henv.reconcile("handle", name)
    assert henv.get("ResourceHandle", name)["status"]["state"] == "Running"
    assert isinstance(resumed, Result) and resumed.requeue_at is not None, resumed  # due at once
    assert resumed.requeue_at <= utcnow(), resumed
    henv.reconcile("handle", name)
    assert henv.get("ResourceHandle", name)["status"]["state"] == "Standby"


def test_a_handle_that_changes_before_the_pool_places_it_is_placed_again_soon(henv: HandleEnv,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's write of ``spec.standby`` carries the resourceVersion it read; a handle written in between fails it
    (the bind wins). The pool then runs again within a second, since the handle's own change need not wake it."""
    henv.configmap_provider("cm", readinessCheck="data is defined")
    henv.pool("vms", minAvailable=2, resources=[{"provider": {"name": "cm"}, "template": TEMPLATE}],
              standby={"running": 1, "patch": {"data": {"power": "off"}}})
    _settle(henv)
    standby = next(h for h in henv.pool_handles("vms") if h["status"].get("state") == "Standby")["metadata"]["name"]
    henv.patch("ResourcePool", "vms", {"spec": {"standby": {"running": 2}}})  # the pool now runs both
    write = henv.kube.patch_json

    def meanwhile(*args: Any, **kwargs: Any) -> Any:  # someone writes the handle between the pool's read and write
        monkeypatch.setattr(henv.kube, "patch_json", write)
        henv.patch("ResourceHandle", standby, {"metadata": {"annotations": {"example.com/touched": "yes"}}})
        return write(*args, **kwargs)

    monkeypatch.setattr(henv.kube, "patch_json", meanwhile)
    now = utcnow()
    outcome = henv.reconcile("pool", "vms", now=now)
    assert henv.get("ResourceHandle", standby)["spec"]["standby"] is True  # the write failed
    assert isinstance(outcome, Result) and outcome.requeue_at is not None
    assert outcome.requeue_at <= now + timedelta(seconds=1)
    henv.reconcile("pool", "vms")
    assert henv.get("ResourceHandle", standby)["spec"]["standby"] is False


def test_a_resume_patch_that_does_not_render_restores_what_the_standby_patch_replaced(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", updateFilters=[{"pathMatch": "/data/.*"}], readinessCheck="data is defined")
    henv.pool("vms", minAvailable=1, resources=[{"provider": {"name": "cm"}, "template": TEMPLATE}],
              standby={"running": 0, "patch": {"data": {"power": "off"}},
                       "resumePatch": {"data": {"power": "{{ no_such_variable }}"}}})
    _settle(henv)
    standby = henv.pool_handles("vms")[0]
    name = standby["metadata"]["name"]
    assert standby["status"]["state"] == "Standby" and _power(henv, standby) == "off"

    # a claim binds it: the resume patch fails to render, so the handle resumes as without one, and says why
    henv.claim("c", {"resources": [{"provider": {"name": "cm"}, "template": TEMPLATE}]})
    henv.converge("claim", "c")
    assert henv.get("ResourceClaim", "c", henv.ns)["status"]["resourceHandle"]["name"] == name
    henv.reconcile("handle", name)
    resumed = henv.get("ResourceHandle", name)
    assert _power(henv, resumed) == "on"
    assert resumed["status"]["state"] == "Running"
    warning = next(e for e in henv.events(name) if e["reason"] == "InvalidStandby")
    assert warning["type"] == "Warning" and "'no_such_variable' is undefined" in warning["message"]
    assert "restoring what the standby patch replaced" in warning["message"]


def test_a_handle_bound_before_its_pool_placed_it_shows_that_it_runs(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", readinessCheck="data.never is defined")  # never ready: the pool never places it
    henv.pool("vms", minAvailable=1, resources=[{"provider": {"name": "cm"}, "template": TEMPLATE}],
              standby={"running": 0, "patch": {"data": {"power": "off"}}})
    henv.reconcile("pool", "vms")
    name = henv.pool_handles("vms")[0]["metadata"]["name"]
    assert henv.get("ResourceHandle", name)["spec"]["standby"] is False  # the pool made it to run

    henv.claim("c", {"resources": [{"provider": {"name": "cm"}, "template": TEMPLATE}]})
    henv.converge("claim", "c")
    assert henv.get("ResourceClaim", "c", henv.ns)["status"]["resourceHandle"]["name"] == name
    henv.reconcile("handle", name)
    assert henv.get("ResourceHandle", name)["status"]["state"] == "Running"

"""Handle reconcile (docs/behaviour.md#linked-providers, #handles, #health, #requester, #deletion handle deleted,
docs/behaviour.md#watching-managed-resources handle side, docs/behaviour.md#hard-cases handle items)."""

from __future__ import annotations

from datetime import timedelta

from poolboy.context import utcnow
from poolboy.result import PermanentError, Result
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv, ts

henv = support.henv  # the fixture


def _status(henv: HandleEnv, name: str) -> dict:
    return henv.get_handle(name).get("status") or {}


def test_handle_creates_resource_named_from_guid_with_annotations(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    handle = henv.resources_handle("guid-ab1cd", "cm", {"data": {"k": "v"}}, resourceAnnotations={"x": "y"},
                                   resourceLabels={"team": "a"})
    henv.converge("handle", "guid-ab1cd")
    cm = henv.configmap("guid0-ab1cd")
    assert cm is not None and cm["data"] == {"k": "v"}
    annotations = cm["metadata"]["annotations"]
    d = henv.d
    assert annotations[f"{d}/resource-provider-name"] == "cm"
    assert annotations[f"{d}/resource-provider-namespace"] == henv.op
    assert annotations[f"{d}/resource-handle-name"] == "guid-ab1cd"
    assert annotations[f"{d}/resource-handle-namespace"] == henv.op
    assert annotations[f"{d}/resource-handle-uid"] == handle["metadata"]["uid"]
    assert annotations[f"{d}/resource-index"] == "0"
    assert annotations["x"] == "y"
    assert cm["metadata"]["labels"]["team"] == "a"
    assert f"{d}/resource-claim-name" not in annotations
    reference = _status(henv, "guid-ab1cd")["resources"][0]["reference"]
    assert reference == {"apiVersion": "v1", "kind": "ConfigMap", "name": "guid0-ab1cd", "namespace": henv.ns}


def test_generate_name_and_explicit_name(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-aaaaa", "cm", {"metadata": {"generateName": "app-"}})
    henv.resources_handle("guid-bbbbb", "cm", {"metadata": {"name": "fixed"}})
    henv.converge("handle", "guid-aaaaa")
    henv.converge("handle", "guid-bbbbb")
    assert henv.configmap("app-aaaaa") is not None
    assert henv.configmap("fixed") is not None


def test_bound_handle_annotates_claim_and_pool(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.claim("c")
    henv.handle("guid-bound", {"resources": [{"provider": henv.provider_ref("cm")}],
                               "resourceClaim": henv.claim_ref("c"),
                               "resourcePool": {"apiVersion": henv.api, "kind": "ResourcePool", "name": "p",
                                                "namespace": henv.op}}, labels=henv.bound_labels("c"))
    henv.reconcile("handle", "guid-bound")
    annotations = henv.configmap("guid0-bound")["metadata"]["annotations"]
    assert annotations[f"{henv.d}/resource-claim-name"] == "c"
    assert annotations[f"{henv.d}/resource-claim-namespace"] == henv.ns
    assert annotations[f"{henv.d}/resource-pool-name"] == "p"
    assert annotations[f"{henv.d}/resource-pool-namespace"] == henv.op


def test_without_update_filters_only_poolboy_annotations_are_updated(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-nofil", "cm", {"data": {"k": "v"}})
    henv.converge("handle", "guid-nofil")
    henv.kube.patch_merge("v1", "ConfigMap", "guid0-nofil", henv.ns, {"data": {"k": "other"}, "metadata": {
        "annotations": {f"{henv.d}/resource-handle-uid": "wrong"}}})
    henv.converge("handle", "guid-nofil")
    cm = henv.configmap("guid0-nofil")
    assert cm["data"] == {"k": "other"}, "fields changed by others are not reverted"
    assert cm["metadata"]["annotations"][f"{henv.d}/resource-handle-uid"] == \
        henv.get_handle("guid-nofil")["metadata"]["uid"]


def test_update_filters_allow_template_changes(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", updateFilters=[{"pathMatch": "/data/.*", "allowedOps": ["add", "replace"]}])
    henv.resources_handle("guid-filt", "cm", {"data": {"k": "v"}})
    henv.converge("handle", "guid-filt")
    henv.patch("ResourceHandle", "guid-filt", {"spec": {"resources": [
        {"provider": henv.provider_ref("cm"), "template": {"data": {"k": "v2", "n": "new"}}}]}})
    henv.converge("handle", "guid-filt")
    assert henv.configmap("guid0-filt")["data"] == {"k": "v2", "n": "new"}


def test_resource_recreated_when_it_disappears(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-recre", "cm")
    henv.converge("handle", "guid-recre")
    henv.kube.delete("v1", "ConfigMap", "guid0-recre", henv.ns)
    henv.converge("handle", "guid-recre")
    assert henv.configmap("guid0-recre") is not None


def test_reference_kind_change_is_permanent_error(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-stick", "cm")
    henv.converge("handle", "guid-stick")
    henv.kube.patch_merge(henv.api, "ResourceProvider", "cm", henv.op, {"spec": {"override": {"kind": "Secret"}}})
    outcome = henv.reconcile("handle", "guid-stick")
    assert isinstance(outcome, PermanentError) and "would change from" in outcome.message
    synced = next(c for c in _status(henv, "guid-stick")["conditions"] if c["type"] == "Synced")
    assert synced["status"] == "False"


def test_missing_api_is_permanent_error_naming_group_version(henv: HandleEnv) -> None:
    henv.provider("nope", override={"apiVersion": "example.com/v9", "kind": "Widget",
                                    "metadata": {"namespace": henv.ns}})
    henv.resources_handle("guid-noapi", "nope")
    outcome = henv.reconcile("handle", "guid-noapi")
    assert isinstance(outcome, PermanentError) and "example.com/v9" in outcome.message


def test_resource_requires_claim_waits_on_unbound_handle(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", resourceRequiresClaim=True)
    henv.resources_handle("guid-rrc", "cm")
    henv.converge("handle", "guid-rrc")
    assert henv.configmap("guid0-rrc") is None
    assert _status(henv, "guid-rrc")["resources"][0]["waitingFor"] == "ResourceClaim"


def test_health_readiness_and_summary(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", healthCheck="data.ok == 'yes'", readinessCheck="data.ready == 'yes'",
                            statusSummaryTemplate={"value": "{{ resources[0].state.data.ready }}"})
    henv.resources_handle("guid-hlth", "cm", {"data": {"ok": "yes", "ready": "no"}})
    henv.converge("handle", "guid-hlth")
    status = _status(henv, "guid-hlth")
    assert status["resources"][0]["healthy"] is True and status["resources"][0]["ready"] is False
    assert status["healthy"] is True and status["ready"] is False
    assert status["summary"] == {"value": "no"}
    henv.kube.patch_merge("v1", "ConfigMap", "guid0-hlth", henv.ns, {"data": {"ready": "yes"}})
    # a resource event enqueues the handle (docs/behaviour.md#watching-managed-resources)
    henv.converge("handle", "guid-hlth")
    status = _status(henv, "guid-hlth")
    assert status["ready"] is True and status["summary"] == {"value": "yes"}
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"


def test_unhealthy_resource_is_never_ready(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", healthCheck="false", readinessCheck="true")
    henv.resources_handle("guid-unhl", "cm")
    henv.converge("handle", "guid-unhl")
    status = _status(henv, "guid-unhl")
    assert status["healthy"] is False and status["ready"] is False


def test_no_checks_give_unknown_health_and_readiness_keys_omitted(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-nochk", "cm")
    henv.converge("handle", "guid-nochk")
    status = _status(henv, "guid-nochk")
    assert "healthy" not in status and "ready" not in status
    assert "healthy" not in status["resources"][0]


def test_converged_handle_generates_no_writes(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-quiet", "cm")
    henv.converge("handle", "guid-quiet")
    rv = henv.get_handle("guid-quiet")["metadata"]["resourceVersion"]
    cm_rv = henv.configmap("guid0-quiet")["metadata"]["resourceVersion"]
    henv.reconcile("handle", "guid-quiet")
    assert henv.get_handle("guid-quiet")["metadata"]["resourceVersion"] == rv
    assert henv.configmap("guid0-quiet")["metadata"]["resourceVersion"] == cm_rv


def test_linked_provider_waits_and_passes_template_vars(henv: HandleEnv) -> None:
    henv.configmap_provider("base", override={"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"namespace": henv.ns}, "data": {"url": "http://x"}})
    henv.configmap_provider("app", template={"enable": True}, linkedResourceProviders=[{
        "name": "base", "waitFor": "linked_resource_state.data.ready | default(false) | bool",
        "templateVars": [{"name": "base_url", "from": "/data/url"}]}],
        override={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": henv.ns},
                  "data": {"url": "{{ base_url }}"}})
    henv.handle("guid-link1", {"provider": {"name": "app", "parameterValues": {}}})
    henv.converge("handle", "guid-link1")
    handle = henv.get_handle("guid-link1")
    assert [r["name"] for r in handle["spec"]["resources"]] == ["base", "app"]
    assert handle["status"]["resources"][1]["waitingFor"] == "Linked ResourceProvider"
    assert henv.configmap("guid1-link1") is None
    henv.kube.patch_merge("v1", "ConfigMap", "guid0-link1", henv.ns, {"data": {"ready": "true"}})
    henv.converge("handle", "guid-link1")
    assert henv.configmap("guid1-link1")["data"] == {"url": "http://x"}
    assert "waitingFor" not in _status(henv, "guid-link1")["resources"][1]


def test_link_when_false_excludes_linked_resource(henv: HandleEnv) -> None:
    henv.configmap_provider("base")
    henv.configmap_provider("app", linkedResourceProviders=[{"name": "base", "when": "with_base | bool"}],
                            parameters=[{"name": "with_base", "default": {"value": False}}])
    henv.handle("guid-when1", {"provider": {"name": "app", "parameterValues": {}}})
    henv.converge("handle", "guid-when1")
    assert [r["name"] for r in henv.get_handle("guid-when1")["spec"]["resources"]] == ["app"]


def test_provider_mode_regenerates_resources_from_parameters(henv: HandleEnv) -> None:
    henv.provider("tmpl", template={"definition": {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"namespace": henv.ns}, "data": {"n": "{{ n }}"}}},
                  updateFilters=[{"pathMatch": "/data/.*"}], parameters=[{"name": "n", "allowUpdate": True}])
    henv.handle("guid-param", {"provider": {"name": "tmpl", "parameterValues": {"n": "1"}}})
    henv.converge("handle", "guid-param")
    assert henv.configmap("guid0-param")["data"] == {"n": "1"}
    henv.patch("ResourceHandle", "guid-param", {"spec": {"provider": {"parameterValues": {"n": "2"}}}})
    henv.converge("handle", "guid-param")
    assert henv.get_handle("guid-param")["spec"]["resources"][0]["template"]["data"] == {"n": "2"}
    assert henv.configmap("guid0-param")["data"] == {"n": "2"}


def test_override_variables_guid_and_index(henv: HandleEnv) -> None:
    henv.configmap_provider("cm", template={"enable": True}, override={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": henv.ns},
        "data": {"guid": "{{ guid }}", "index": "{{ resource_index }}", "handle": "{{ resource_handle.name }}"}})
    henv.resources_handle("guid-vars1", "cm")
    henv.converge("handle", "guid-vars1")
    assert henv.configmap("guid0-vars1")["data"] == {"guid": "vars1", "index": "0", "handle": "guid-vars1"}


def test_requester_annotations_and_variables(henv: HandleEnv) -> None:
    henv.kube.patch_merge("v1", "Namespace", henv.ns, None, {"metadata": {"annotations": {
        "openshift.io/requester": "alice"}}})
    henv.configmap_provider("cm", template={"enable": True}, override={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": henv.ns},
        "data": {"user": "{{ requester_user.metadata.name }}"}})
    henv.claim("c")
    henv.handle("guid-reqst", {"resources": [{"provider": henv.provider_ref("cm")}],
                               "resourceClaim": henv.claim_ref("c")}, labels=henv.bound_labels("c"))
    henv.reconcile("handle", "guid-reqst")
    cm = henv.configmap("guid0-reqst")
    assert cm["data"] == {"user": "alice"}, "a missing user API/user becomes {metadata: {name}}"
    assert cm["metadata"]["annotations"][f"{henv.d}/resource-requester-user"] == "alice"
    assert f"{henv.d}/resource-requester-email" not in cm["metadata"]["annotations"]


def test_handle_past_lifespan_end_is_deleted_with_resources(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    now = utcnow()
    henv.resources_handle("guid-expir", "cm", lifespan={"end": ts(now + timedelta(minutes=5))})
    outcome = henv.outcome(henv.converge("handle", "guid-expir", now=now), "handle", "guid-expir")
    assert outcome.requeue_at == now + timedelta(minutes=5)
    assert henv.configmap("guid0-expir") is not None
    henv.converge("handle", "guid-expir", now=now + timedelta(minutes=5))
    assert henv.get_handle("guid-expir") is None
    assert henv.configmap("guid0-expir") is None


def test_bound_handle_whose_claim_is_gone_is_deleted(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.handle("guid-orphn", {"resources": [{"provider": henv.provider_ref("cm")}],
                               "resourceClaim": henv.claim_ref("never")}, labels=henv.bound_labels("never"))
    henv.reconcile("handle", "guid-orphn")  # deletes the handle
    henv.reconcile("handle", "guid-orphn")  # cleanup, finalizer removed
    assert henv.get_handle("guid-orphn") is None


def test_handle_deleted_deletes_resources_and_bound_claim(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.claim("c")
    henv.handle("guid-delet", {"resources": [{"provider": henv.provider_ref("cm")}],
                               "resourceClaim": henv.claim_ref("c")}, labels=henv.bound_labels("c"))
    henv.reconcile("handle", "guid-delet")
    assert henv.configmap("guid0-delet") is not None
    henv.kube.delete(henv.api, "ResourceHandle", "guid-delet", henv.op)
    henv.reconcile("handle", "guid-delet")
    assert henv.get_handle("guid-delet") is None, "finalizer removed after cleanup"
    assert henv.configmap("guid0-delet") is None
    claim = henv.get("ResourceClaim", "c", henv.ns)
    assert claim is None or claim["metadata"].get("deletionTimestamp")


def test_handle_deleted_keeps_detached_claim(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.claim("c")
    henv.kube.patch_merge(henv.api, "ResourceClaim", "c", henv.ns, {"status": {"resourceHandle": {
        "apiVersion": henv.api, "kind": "ResourceHandle", "name": "guid-detch", "namespace": henv.op,
        "detached": True}}}, status=True)
    henv.handle("guid-detch", {"resources": [{"provider": henv.provider_ref("cm")}],
                               "resourceClaim": henv.claim_ref("c")}, labels=henv.bound_labels("c"))
    henv.kube.delete(henv.api, "ResourceHandle", "guid-detch", henv.op)
    henv.reconcile("handle", "guid-detch")
    claim = henv.get("ResourceClaim", "c", henv.ns)
    assert claim is not None and not claim["metadata"].get("deletionTimestamp")


def test_deleting_handle_never_creates_resources(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-nocre", "cm")
    henv.kube.patch_merge(henv.api, "ResourceHandle", "guid-nocre", henv.op,
                          {"metadata": {"finalizers": [henv.d, "example.com/hold"]}})
    henv.kube.delete(henv.api, "ResourceHandle", "guid-nocre", henv.op)
    henv.reconcile("handle", "guid-nocre")
    assert henv.configmap("guid0-nocre") is None
    assert henv.get_handle("guid-nocre")["metadata"]["finalizers"] == ["example.com/hold"]


def test_legacy_finalizers_are_removed_after_cleanup(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.handle("guid-legcy", {"resources": [{"provider": henv.provider_ref("cm")}]},
                finalizers=[f"{henv.d}/handler", f"{henv.d}/handler-2"])
    henv.kube.delete(henv.api, "ResourceHandle", "guid-legcy", henv.op)
    henv.reconcile("handle", "guid-legcy")
    assert henv.get_handle("guid-legcy") is None


def test_ignored_handle_writes_nothing(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.kube.create({"apiVersion": henv.api, "kind": "ResourceHandle", "metadata": {
        "name": "guid-ignor", "namespace": henv.op, "labels": {f"{henv.d}/ignore": ""}},
        "spec": {"resources": [{"provider": henv.provider_ref("cm")}]}})
    henv.reconcile("handle", "guid-ignor")
    handle = henv.get_handle("guid-ignor")
    assert not handle["metadata"].get("finalizers") and not handle.get("status")
    assert henv.configmap("guid0-ignor") is None


def test_provider_change_enqueues_dependants(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.resources_handle("guid-depnd", "cm")
    henv.pool("pool", minAvailable=0, provider={"name": "cm"})
    outcome = henv.reconcile("provider", "cm")
    assert henv.key("handle", "guid-depnd") in outcome.wake
    assert henv.key("pool", "pool") in outcome.wake


def test_provider_change_wakes_the_unbound_claims_that_may_select_it_and_no_others(henv: HandleEnv) -> None:
    henv.configmap_provider("cm")
    henv.configmap_provider("parent", linkedResourceProviders=[{"name": "middle"}])
    henv.configmap_provider("middle", linkedResourceProviders=[{"name": "cm"}])
    henv.configmap_provider("other")
    henv.claim("names-it", {"resources": [{"provider": {"name": "cm"}}]})
    henv.claim("by-template", {"resources": [{"template": {"data": {"x": "1"}}}]})
    henv.claim("through-a-link", {"resources": [{"provider": {"name": "parent"}}]})
    henv.claim("provider-mode", {"provider": {"name": "cm"}})
    henv.claim("elsewhere", {"resources": [{"provider": {"name": "other"}}]})
    henv.claim("elsewhere-too", {"provider": {"name": "other"}})
    woken = set(henv.reconcile("provider", "cm").wake)
    assert {henv.key("claim", name) for name in ("names-it", "by-template", "through-a-link", "provider-mode")} \
        <= woken
    assert not {henv.key("claim", "elsewhere"), henv.key("claim", "elsewhere-too")} & woken, \
        "an unbound claim of another provider cannot select this one"


def test_an_unbound_pool_handle_holds_its_pool_briefly_only_when_its_readiness_changes(henv: HandleEnv) -> None:
    """The pool's READY column follows its handles within the delaying queue's next tick (window 0); any other change
    of an unbound handle holds the pool for the usual window, so a burst of them costs one pool run."""
    henv.configmap_provider("cm", readinessCheck="data.ready == 'yes'",
                            statusSummaryTemplate={"v": "{{ resources[0].state.data.v }}"})
    pool_ref = {"apiVersion": henv.api, "kind": "ResourcePool", "name": "p", "namespace": henv.op}
    henv.resources_handle("guid-hold", "cm", {"data": {"ready": "no", "v": "1"}}, resourcePool=pool_ref)
    pool_key = f"pool/{henv.op}/p"
    first = henv.reconcile("handle", "guid-hold")  # the resource is made: the handle shows ready=False
    assert isinstance(first, Result) and pool_key in first.hold and first.hold_seconds == 0.0
    henv.kube.patch_merge("v1", "ConfigMap", "guid0-hold", henv.ns, {"data": {"v": "2"}})
    other = henv.reconcile("handle", "guid-hold")  # its summary changed, its readiness did not
    assert _status(henv, "guid-hold")["summary"] == {"v": "2"}
    assert isinstance(other, Result) and pool_key in other.hold and other.hold_seconds is None
    henv.kube.patch_merge("v1", "ConfigMap", "guid0-hold", henv.ns, {"data": {"ready": "yes"}})
    ready = henv.reconcile("handle", "guid-hold")
    assert _status(henv, "guid-hold")["ready"] is True
    assert isinstance(ready, Result) and pool_key in ready.hold and ready.hold_seconds == 0.0

"""Provider-mode claims (``spec.provider`` with ``parameterValues``) on the running stack, as a user sees them.

Each test is one user scenario from docs/behaviour.md (docs/behaviour.md#triggers-and-finalizers, #provider-selection,
#parameters, #approval, #linked-providers, #claim-status, #auto-delete-and-auto-detach, #lifespans, #deletion), with its
own namespace and provider so the scenarios stay independent while sharing one module-scoped stack.
"""

from __future__ import annotations

from datetime import timedelta

from stack.local import LocalStack
from tests.e2e.provider_support import (
    NS,
    D,
    User,
    condition,
    config_map_provider,
    parse,
    status,
    timestamp,
)
from tests.waiting import holds_until, wait_for


def handle_name(claim: dict) -> str:
    return status(claim)["resourceHandle"]["name"]


def resource_name(user: User, claim: dict, index: int = 0) -> str:
    """The managed resource's name, once the handle recorded its reference."""
    def reference() -> str | None:
        handle = user.get_handle(handle_name(claim)) or {}
        resources = status(handle).get("resources") or []
        return ((resources[index] if len(resources) > index else {}).get("reference") or {}).get("name")

    return wait_for(reference, timeout=15, interval=0.1, message="resource reference recorded")


# --- docs/behaviour.md#triggers-and-finalizers finalizer, ignore label
# ------------------------------------------------------------------------------


def test_claim_gets_finalizer_and_ignored_claim_is_untouched_until_label_removed(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("ignore")
    user.provider("p-ignore", config_map_provider(ns))
    user.claim(ns, "ignored", {"provider": {"name": "p-ignore", "parameterValues": {"greeting": "a"}}},
               {"labels": {f"{D}/ignore": ""}})
    user.claim(ns, "control", {"provider": {"name": "p-ignore", "parameterValues": {"greeting": "b"}}})
    control = user.wait_bound(ns, "control")
    assert D in control["metadata"]["finalizers"]

    ignored = user.get_claim(ns, "ignored")
    assert ignored is not None
    assert not ignored["metadata"].get("finalizers")
    assert "status" not in ignored or not ignored["status"]

    user.patch_claim(ns, "ignored", {"metadata": {"labels": {f"{D}/ignore": None}}})
    bound = user.wait_bound(ns, "ignored")
    assert D in bound["metadata"]["finalizers"]
    cm = resource_name(user, bound)
    wait_for(lambda: (user.config_map(ns, cm) or {}).get("data", {}).get("greeting") == "a", timeout=15,
             message="ConfigMap created with the claim's greeting")


def test_ignoring_a_bound_claim_then_resuming_adopts_its_handle_and_resource(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("adopt")
    user.provider("p-adopt", config_map_provider(ns))
    user.claim(ns, "c", {"provider": {"name": "p-adopt", "parameterValues": {"greeting": "one"}}})
    claim = user.wait_bound(ns, "c")
    handle = handle_name(claim)
    cm = resource_name(user, claim)
    init = claim["metadata"]["annotations"][f"{D}/resource-claim-init-timestamp"]

    user.patch_claim(ns, "c", {"metadata": {"labels": {f"{D}/ignore": "true"}}})
    user.patch_claim(ns, "c", {"spec": {"provider": {"parameterValues": {"greeting": "two"}}}})

    user.patch_claim(ns, "c", {"metadata": {"labels": {f"{D}/ignore": None}}})
    wait_for(lambda: (user.config_map(ns, cm) or {}).get("data", {}).get("greeting") == "two", timeout=15,
             message="the same ConfigMap updated after resuming")
    claim = user.get_claim(ns, "c")
    assert handle_name(claim) == handle
    assert claim["metadata"]["annotations"][f"{D}/resource-claim-init-timestamp"] == init
    assert len(user.handles(f"{D}/resource-claim-name=c,{D}/resource-claim-namespace={ns}")) == 1


def test_an_ignored_handle_is_left_alone_until_resumed(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("ighandle")
    user.provider("p-ighandle", config_map_provider(ns))
    user.claim(ns, "c", {"provider": {"name": "p-ighandle", "parameterValues": {"greeting": "one"}}})
    claim = user.wait_bound(ns, "c")
    handle, cm = handle_name(claim), resource_name(user, claim)
    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcehandles", handle,
                                               {"metadata": {"labels": {f"{D}/ignore": ""}}})
    version = user.get_handle(handle)["metadata"]["resourceVersion"]
    user.patch_claim(ns, "c", {"spec": {"provider": {"parameterValues": {"greeting": "two"}}}})
    user.wait_claim(ns, "c", lambda c: status(c)["provider"]["parameterValues"]["greeting"] == "two",
                    message="new value accepted on the claim")
    assert user.get_handle(handle)["metadata"]["resourceVersion"] == version
    assert user.config_map(ns, cm)["data"]["greeting"] == "one"

    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcehandles", handle,
                                               {"metadata": {"labels": {f"{D}/ignore": None}}})
    wait_for(lambda: user.config_map(ns, cm)["data"]["greeting"] == "two", timeout=10,
             message="the change flows once the handle is resumed")


# --- docs/behaviour.md#provider-selection provider selection
# --------------------------------------------------------------------------------


def test_missing_provider_is_reported_then_the_claim_recovers_when_it_appears(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("missing")
    user.claim(ns, "c", {"provider": {"name": "p-later", "parameterValues": {"greeting": "x"}}})
    claim = user.wait_claim(ns, "c", lambda c: condition(c, "Synced").get("reason") == "ProviderNotFound",
                            message="ProviderNotFound")
    assert condition(claim, "Synced")["status"] == "False"
    assert "p-later" in condition(claim, "Synced")["message"]
    wait_for(lambda: any(e.reason == "ProviderNotFound" and e.type == "Warning" for e in user.events(ns, "c")),
             timeout=10, message="ProviderNotFound Warning Event")

    user.provider("p-later", config_map_provider(ns))
    claim = user.wait_bound(ns, "c", timeout=6)
    assert condition(claim, "Synced")["status"] == "True"


def test_changing_provider_name_is_refused(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("immut")
    user.provider("p-immut-a", config_map_provider(ns))
    user.provider("p-immut-b", config_map_provider(ns))
    user.claim(ns, "c", {"provider": {"name": "p-immut-a", "parameterValues": {}}})
    claim = user.wait_bound(ns, "c")
    resource_name(user, claim)  # the handle has made its resource: its spec is settled
    handle = user.get_handle(handle_name(claim))
    user.patch_claim(ns, "c", {"spec": {"provider": {"name": "p-immut-b"}}})
    refused = user.wait_claim(ns, "c", lambda c: "spec.provider is immutable" in condition(c, "Synced").get(
        "message", ""), message="immutable provider error")
    # the run that refused the change wrote nothing of it: the claim keeps its provider's resources and its handle,
    # and the handle is still the first provider's
    assert refused["spec"].get("resources") == claim["spec"].get("resources")
    assert status(refused)["provider"]["name"] == "p-immut-a"
    assert handle_name(refused) == handle["metadata"]["name"]
    assert user.get_handle(handle["metadata"]["name"])["spec"] == handle["spec"]
    assert len(user.handles(f"{D}/resource-claim-name=c,{D}/resource-claim-namespace={ns}")) == 1


# --- docs/behaviour.md#parameters parameters
# ------------------------------------------------------------------------------------------


def parameters_provider(ns: str) -> dict:
    return config_map_provider(ns, parameters=[
        {"name": "greeting", "allowUpdate": True, "default": {"value": "hello"}},
        {"name": "size", "required": True,
         "validation": {"openAPIV3Schema": {"type": "integer", "minimum": 1}, "checks": [
             {"name": "small", "check": "value < 10"}]}},
        {"name": "token", "default": {"template": "{{ '[a-z0-9]{12}' | strgen }}"}},
        {"name": "color", "default": {"value": "red"}},
        {"name": "schema_default", "validation": {"openAPIV3Schema": {"type": "string", "default": "sd"}}},
    ])


def test_parameter_defaults_are_applied_and_a_random_default_stays_stable(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("defaults")
    user.provider("p-defaults", parameters_provider(ns))
    user.claim(ns, "c", {"provider": {"name": "p-defaults", "parameterValues": {"size": 3}}})
    claim = user.wait_bound(ns, "c")
    values = status(claim)["provider"]["parameterValues"]
    assert values["greeting"] == "hello"
    assert values["color"] == "red"
    assert values["schema_default"] == "sd"
    assert values["size"] == 3
    token = values["token"]
    assert len(token) == 12
    handle = user.get_handle(handle_name(claim))
    assert handle["spec"]["provider"] == {"name": "p-defaults", "parameterValues": values}

    # any later reconcile (an edit of an allowUpdate parameter) keeps the rendered default
    user.patch_claim(ns, "c", {"spec": {"provider": {"parameterValues": {"greeting": "hi"}}}})
    claim = user.wait_claim(ns, "c", lambda c: status(c)["provider"]["parameterValues"]["greeting"] == "hi",
                            message="greeting accepted")
    assert status(claim)["provider"]["parameterValues"]["token"] == token


def test_parameter_validation_messages_and_correction(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("pvalid")
    user.provider("p-pvalid", parameters_provider(ns))

    def errors_of(name: str) -> list[str]:
        return status(user.get_claim(ns, name)).get("provider", {}).get("validationErrors") or []

    user.claim(ns, "schema", {"provider": {"name": "p-pvalid", "parameterValues": {"size": "x"}}})
    user.claim(ns, "check", {"provider": {"name": "p-pvalid", "parameterValues": {"size": 12}}})
    user.claim(ns, "required", {"provider": {"name": "p-pvalid", "parameterValues": {}}})
    user.claim(ns, "unknown", {"provider": {"name": "p-pvalid", "parameterValues": {"size": 1, "nope": 1}}})

    wait_for(lambda: errors_of("schema"), timeout=15, message="schema error")
    assert errors_of("schema") == ["Parameter size schema validation failed: 'x' is not of type 'integer'"]
    wait_for(lambda: errors_of("check"), timeout=15, message="check error")
    assert errors_of("check") == ["Parameter size failed check: small"]
    wait_for(lambda: errors_of("required"), timeout=15, message="required error")
    assert errors_of("required") == ["Parameter size is required."]
    wait_for(lambda: errors_of("unknown"), timeout=15, message="unknown parameter error")
    assert errors_of("unknown") == ["No such parameter nope."]

    for name in ("schema", "check", "required", "unknown"):
        claim = user.get_claim(ns, name)
        assert "resourceHandle" not in status(claim), f"invalid claim {name} was bound"
        assert "size" not in (status(claim)["provider"].get("parameterValues") or {}), "invalid value stored"
        assert condition(claim, "Synced")["status"] == "False"

    # before any accepted values there is no immutability: the first value can be corrected
    user.patch_claim(ns, "schema", {"spec": {"provider": {"parameterValues": {"size": 2}}}})
    claim = user.wait_bound(ns, "schema")
    assert "validationErrors" not in status(claim)["provider"]
    # removing the unknown key clears its error
    user.patch_claim(ns, "unknown", {"spec": {"provider": {"parameterValues": {"nope": None}}}})
    user.wait_bound(ns, "unknown")


def test_immutable_parameter_change_is_refused_and_the_handle_keeps_the_last_valid_values(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("pimmut")
    user.provider("p-pimmut", parameters_provider(ns))
    user.claim(ns, "c", {"provider": {"name": "p-pimmut", "parameterValues": {"size": 3}}})
    claim = user.wait_bound(ns, "c")
    handle = handle_name(claim)

    user.patch_claim(ns, "c", {"spec": {"provider": {"parameterValues": {"size": 4, "greeting": "changed"}}}})
    claim = user.wait_claim(ns, "c", lambda c: status(c)["provider"].get("validationErrors"),
                            message="immutable error")
    assert status(claim)["provider"]["validationErrors"] == ["Parameter size is immutable."]
    assert status(claim)["provider"]["parameterValues"]["size"] == 3
    assert status(claim)["provider"]["parameterValues"]["greeting"] == "hello"
    assert user.get_handle(handle)["spec"]["provider"]["parameterValues"]["size"] == 3
    assert user.get_handle(handle)["spec"]["provider"]["parameterValues"]["greeting"] == "hello"

    user.patch_claim(ns, "c", {"spec": {"provider": {"parameterValues": {"size": 3}}}})
    claim = user.wait_claim(ns, "c", lambda c: not status(c)["provider"].get("validationErrors"),
                            message="error cleared after reverting")
    wait_for(lambda: user.get_handle(handle)["spec"]["provider"]["parameterValues"]["greeting"] == "changed",
             timeout=15, message="the allowed change flows to the handle")


def test_provider_update_adds_a_parameter_and_tightens_rules_without_breaking_bound_claims(
        stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("provupd")
    user.provider("p-provupd", config_map_provider(ns))
    user.claim(ns, "c", {"provider": {"name": "p-provupd", "parameterValues": {"greeting": "long-greeting"}}})
    claim = user.wait_bound(ns, "c")
    cm = resource_name(user, claim)

    provider = user.custom.get_namespaced_custom_object(D, "v1", NS, "resourceproviders", "p-provupd")
    provider["spec"]["parameters"] = [
        {"name": "greeting", "allowUpdate": True, "default": {"value": "hello"},
         "validation": {"openAPIV3Schema": {"type": "string", "maxLength": 5}}},
        {"name": "color", "default": {"value": "blue"}}]
    provider["spec"]["template"]["definition"]["data"]["color"] = "{{ color }}"
    user.custom.replace_namespaced_custom_object(D, "v1", NS, "resourceproviders", "p-provupd", provider)

    wait_for(lambda: user.config_map(ns, cm)["data"] == {"greeting": "long-greeting", "color": "blue"}, timeout=10,
             message="the new parameter's default reaches the live resource")
    # the handle's run renders the new default from the provider; the claim's own run records it in its status
    claim = user.wait_claim(ns, "c", lambda c: status(c)["provider"]["parameterValues"].get("color") == "blue",
                            message="the new parameter's default in the claim's status")
    assert status(claim)["provider"]["parameterValues"] == {"greeting": "long-greeting", "color": "blue"}
    assert "validationErrors" not in status(claim)["provider"]  # unchanged value stays valid; default not immutable


def test_allow_update_parameter_change_reaches_the_live_resource(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("flow")
    user.provider("p-flow", config_map_provider(ns, statusSummaryTemplate={"greeting": "{{ greeting }}"}))
    user.claim(ns, "c", {"provider": {"name": "p-flow", "parameterValues": {"greeting": "hi"}}})
    claim = user.wait_bound(ns, "c")
    cm = resource_name(user, claim)
    wait_for(lambda: (user.config_map(ns, cm) or {}).get("data", {}).get("greeting") == "hi", timeout=15,
             message="ConfigMap created")
    user.patch_claim(ns, "c", {"spec": {"provider": {"parameterValues": {"greeting": "bye"}}}})
    wait_for(lambda: (user.config_map(ns, cm) or {}).get("data", {}).get("greeting") == "bye", timeout=10,
             message="ConfigMap updated through updateFilters")
    handle = user.get_handle(handle_name(claim))
    assert handle["spec"]["resources"][0]["template"]["data"]["greeting"] == "bye"
    user.wait_claim(ns, "c", lambda c: status(c).get("summary") == {"greeting": "bye"}
                    and status(c)["resources"][0]["state"]["data"]["greeting"] == "bye",
                    message="summary and state follow")


# --- docs/behaviour.md#approval approval
# --------------------------------------------------------------------------------------------


def test_approval_pending_then_approved_processes_promptly_and_rejected_stays_blocked(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("approval")
    user.provider("p-approval", config_map_provider(ns, approval={"required": True, "pendingMessage": "Wait."}))
    user.claim(ns, "a", {"provider": {"name": "p-approval", "parameterValues": {}}})
    user.claim(ns, "r", {"provider": {"name": "p-approval", "parameterValues": {}}})
    for name in ("a", "r"):
        claim = user.wait_claim(ns, name, lambda c: status(c).get("approval"), message="approval pending")
        assert status(claim)["approval"] == {"state": "pending", "message": "Wait."}
        for key in ("lifespan", "resourceHandle", "resources", "summary"):
            assert key not in status(claim), key
    assert not user.handles(f"{D}/resource-claim-namespace={ns}")

    user.patch_claim_status(ns, "r", {"status": {"approval": {"state": "rejected", "message": "No."}}})
    user.patch_claim_status(ns, "a", {"status": {"approval": {"state": "approved", "message": "Ok."}}})

    def rejected_stays_blocked() -> None:
        rejected = user.get_claim(ns, "r")
        assert "resourceHandle" not in status(rejected), rejected
        assert status(rejected)["approval"]["state"] == "rejected", rejected
        assert not user.handles(f"{D}/resource-claim-name=r,{D}/resource-claim-namespace={ns}")

    # the claim approved at the same moment binds within the window, which then lasts as long again: a bind of the
    # rejected claim as prompt, or up to twice as slow, would show
    holds_until(rejected_stays_blocked, lambda: status(user.get_claim(ns, "a")).get("resourceHandle"), timeout=4,
                extend=1.0, message="the approved claim bound")
    assert status(user.get_claim(ns, "a"))["approval"]["state"] == "approved"
    assert len(user.handles(f"{D}/resource-claim-namespace={ns}")) == 1


# --- docs/behaviour.md#linked-providers linked providers
# ------------------------------------------------------------------------------------


def test_linked_provider_waits_for_the_base_resource_then_uses_its_state(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("linked")
    user.provider("p-base", {
        "parameters": [{"name": "seed"}],
        "template": {"enable": True, "definition": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns}, "data": {"seed": "{{ seed }}"}}},
        "override": {"metadata": {"name": "base-{{ guid }}"}},
        "healthCheck": "true", "readinessCheck": "true",
    })
    user.provider("p-app", {
        "parameters": [{"name": "seed", "default": {"value": "s1"}}],
        "linkedResourceProviders": [{
            "name": "p-base", "parameterValues": {"seed": "{{ seed }}-linked"},
            "waitFor": "linked_resource_state.data.token is defined",
            "templateVars": [{"name": "base_token", "from": "/data/token"}]}],
        "template": {"enable": True, "definition": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns}, "data": {"role": "app"}}},
        "override": {"metadata": {"name": "app-{{ guid }}"}, "data": {"token": "{{ base_token }}"}},
        "healthCheck": "true", "readinessCheck": "true",
    })
    user.claim(ns, "c", {"provider": {"name": "p-app", "parameterValues": {}}})
    claim = user.wait_claim(ns, "c", lambda c: len(status(c).get("resources") or []) == 2
                            and status(c)["resources"][1].get("waitingFor") == "Linked ResourceProvider",
                            message="app waiting for its link")
    assert [r["name"] for r in status(claim)["resources"]] == ["p-base", "p-app"]
    base = resource_name(user, claim, 0)
    assert user.config_map(ns, base)["data"]["seed"] == "s1-linked"
    assert not [cm for cm in user.config_maps(ns) if cm.metadata.name.startswith("app-")]

    user.core.patch_namespaced_config_map(base, ns, {"data": {"token": "t0k3n"}})
    app = resource_name(user, claim, 1)
    assert user.config_map(ns, app)["data"] == {"role": "app", "token": "t0k3n"}
    user.wait_claim(ns, "c", lambda c: "waitingFor" not in status(c)["resources"][1], message="waitingFor removed")


def test_linked_provider_when_and_resource_name(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("when")
    user.provider("p-db", {
        "parameters": [{"name": "size"}],
        "template": {"enable": True, "definition": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns}, "data": {"size": "{{ size }}"}}},
        "override": {"metadata": {"name": "db-{{ guid }}"}},
    })
    user.provider("p-web", {
        "parameters": [{"name": "database", "default": {"value": True}},
                       {"name": "size", "default": {"template": "{{ resource_claim.metadata.name }}-size"}}],
        "linkedResourceProviders": [{"name": "p-db", "resourceName": "database", "when": "database",
                                     "parameterValues": {"size": "{{ size }}"}}],
        "template": {"enable": True, "definition": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns}, "data": {"role": "web"}}},
        "override": {"metadata": {"name": "web-{{ guid }}"}},
    })
    user.claim(ns, "with-db", {"provider": {"name": "p-web", "parameterValues": {}}})
    user.claim(ns, "no-db", {"provider": {"name": "p-web", "parameterValues": {"database": False}}})
    with_db, no_db = user.wait_bound(ns, "with-db"), user.wait_bound(ns, "no-db")
    assert [r["name"] for r in status(with_db)["resources"]] == ["database", "p-web"]
    assert [r["name"] for r in status(no_db)["resources"]] == ["p-web"]
    database = resource_name(user, with_db, 0)
    assert user.config_map(ns, database)["data"] == {"size": "with-db-size"}
    resource_name(user, with_db, 1)
    assert resource_name(user, no_db, 0).startswith("web-")


# --- docs/behaviour.md#claim-status mirroring, docs/behaviour.md#auto-delete-and-auto-detach autoDelete/autoDetach
# -------------------------------------------------------------


def summary_provider(ns: str) -> dict:
    """``data.phase`` is written by someone else (not in the template; the filter only lets Poolboy own greeting)."""
    return config_map_provider(ns, readinessCheck="data.phase == 'running'", healthCheck="data.phase != 'failed'",
                               updateFilters=[{"pathMatch": "/data/greeting"}],
                               statusSummaryTemplate={
                                   "phase": "{{ resources[0].state.data.phase | default('none') }}"})


def test_claim_status_follows_the_managed_resource(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("mirror")
    user.provider("p-mirror", summary_provider(ns))
    user.claim(ns, "c", {"provider": {"name": "p-mirror", "parameterValues": {}}})
    claim = user.wait_bound(ns, "c")
    cm = resource_name(user, claim)
    claim = user.wait_claim(ns, "c", lambda c: status(c).get("summary") == {"phase": "none"}, message="summary")
    assert status(claim).get("ready") is not True

    user.core.patch_namespaced_config_map(cm, ns, {"data": {"phase": "running"}})
    claim = user.wait_claim(ns, "c", lambda c: status(c).get("ready") is True, timeout=5, message="ready")
    assert status(claim)["healthy"] is True
    assert status(claim)["summary"] == {"phase": "running"}
    assert status(claim)["resources"][0]["state"]["data"]["phase"] == "running"
    assert condition(claim, "Ready")["status"] == "True"
    assert status(claim)["lifespan"].get("firstReady")

    user.core.patch_namespaced_config_map(cm, ns, {"data": {"phase": "failed"}})
    claim = user.wait_claim(ns, "c", lambda c: status(c).get("healthy") is False, timeout=5, message="unhealthy")
    assert status(claim)["ready"] is False
    assert condition(claim, "Healthy")["status"] == "False"


def test_auto_delete_and_auto_detach_from_the_summary(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("auto")
    user.provider("p-auto", summary_provider(ns))
    user.claim(ns, "del", {"provider": {"name": "p-auto", "parameterValues": {}},
                           "autoDelete": {"when": "status.summary.phase == 'finished'"}})
    user.claim(ns, "det", {"provider": {"name": "p-auto", "parameterValues": {}},
                           "autoDetach": {"when": "status.summary.phase == 'finished'"}})
    deleting = user.wait_bound(ns, "del")
    detaching = user.wait_bound(ns, "det")
    del_cm, det_cm = resource_name(user, deleting), resource_name(user, detaching)
    del_handle, det_handle = handle_name(deleting), handle_name(detaching)

    user.core.patch_namespaced_config_map(del_cm, ns, {"data": {"phase": "finished"}})
    user.core.patch_namespaced_config_map(det_cm, ns, {"data": {"phase": "finished"}})
    user.wait_gone(ns, "del", timeout=8)
    wait_for(lambda: user.get_handle(del_handle) is None and user.config_map(ns, del_cm) is None, timeout=10,
             message="autoDelete cascades to handle and ConfigMap")
    claim = user.wait_claim(ns, "det", lambda c: status(c)["resourceHandle"].get("detached") is True, timeout=8,
                            message="detached")
    wait_for(lambda: user.get_handle(det_handle) is None and user.config_map(ns, det_cm) is None, timeout=10,
             message="autoDetach deletes handle and ConfigMap")
    assert user.get_claim(ns, "det") is not None
    assert condition(claim, "Bound")["reason"] == "Detached"


def test_detached_claim_is_deleted_when_its_lifespan_ends(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("detend")
    user.provider("p-detend", config_map_provider(ns, lifespan={"default": "6s"},
                                                  statusSummaryTemplate={"greeting": "{{ greeting }}"}))
    user.claim(ns, "c", {"provider": {"name": "p-detend", "parameterValues": {"greeting": "bye"}},
                         "autoDetach": {"when": "status.summary.greeting == 'bye'"}})
    claim = user.wait_claim(ns, "c", lambda c: (status(c).get("resourceHandle") or {}).get("detached"),
                            message="detached at once")
    end = parse(status(claim)["lifespan"]["end"])
    user.wait_gone(ns, "c", timeout=12)
    assert parse(timestamp()) >= end


# --- docs/behaviour.md#lifespans lifespans
# ------------------------------------------------------------------------------------------


def test_lifespan_default_maximum_and_clamped_requested_end(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("life")
    user.provider("p-life", config_map_provider(
        ns, readinessCheck="false", lifespan={"default": "1h", "maximum": "1d", "relativeMaximum": "12h"}))
    user.claim(ns, "c", {"provider": {"name": "p-life", "parameterValues": {}}})
    claim = user.wait_bound(ns, "c")
    lifespan = status(claim)["lifespan"]
    assert parse(lifespan["end"]) - parse(lifespan["start"]) == timedelta(hours=1)
    assert lifespan["maximum"] == "1d"
    assert lifespan["relativeMaximum"] == "12h"

    user.patch_claim(ns, "c", {"spec": {"lifespan": {"end": timestamp(timedelta(days=5))}}})
    handle = handle_name(claim)

    def clamped() -> bool:
        end = ((user.get_handle(handle) or {}).get("spec", {}).get("lifespan") or {}).get("end")
        return end is not None and parse(end) <= parse(timestamp(timedelta(hours=12)))

    wait_for(clamped, timeout=10, message="requested end clamped to relativeMaximum")
    user.wait_claim(ns, "c", lambda c: parse(status(c)["lifespan"]["end"]) < parse(timestamp(timedelta(hours=13))),
                    message="claim status end mirrored")
    wait_for(lambda: any(e.reason == "Lifespan end changed" and e.action == "LifespanChange"
                         for e in user.events(ns, "c")), timeout=5, message="LifespanChange event")

    cm = resource_name(user, claim)
    user.patch_claim(ns, "c", {"spec": {"lifespan": {"end": timestamp()}}})
    user.wait_gone(ns, "c", timeout=6)
    wait_for(lambda: user.get_handle(handle) is None and user.config_map(ns, cm) is None, timeout=10,
             message="expired claim's handle and ConfigMap deleted")


def test_lifespan_start_in_the_future_delays_everything(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("start")
    user.provider("p-start", config_map_provider(ns, lifespan={"default": "1h"}))
    start = timestamp(timedelta(seconds=4))
    user.claim(ns, "c", {"provider": {"name": "p-start", "parameterValues": {}}, "lifespan": {"start": start}})
    user.claim(ns, "now", {"provider": {"name": "p-start", "parameterValues": {}}})
    user.wait_bound(ns, "now")
    early = user.get_claim(ns, "c")
    if parse(timestamp()) < parse(start):
        assert not status(early)
        assert f"{D}/resource-claim-init-timestamp" not in (early["metadata"].get("annotations") or {})
    claim = user.wait_bound(ns, "c", timeout=10)
    assert parse(status(claim)["lifespan"]["start"]) >= parse(start)


# --- docs/behaviour.md#deletion deletion cascades
# ----------------------------------------------------------------------------------


def test_deleting_the_claim_or_the_handle_cascades(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("cascade")
    user.provider("p-cascade", config_map_provider(ns))
    user.claim(ns, "by-claim", {"provider": {"name": "p-cascade", "parameterValues": {}}})
    user.claim(ns, "by-handle", {"provider": {"name": "p-cascade", "parameterValues": {}}})
    first, second = user.wait_bound(ns, "by-claim"), user.wait_bound(ns, "by-handle")
    first_cm, second_cm = resource_name(user, first), resource_name(user, second)

    user.delete_claim(ns, "by-claim")
    user.wait_gone(ns, "by-claim")
    wait_for(lambda: user.get_handle(handle_name(first)) is None and user.config_map(ns, first_cm) is None,
             timeout=10, message="claim deletion removes handle and ConfigMap")

    user.custom.delete_namespaced_custom_object(D, "v1", NS, "resourcehandles", handle_name(second))
    user.wait_gone(ns, "by-handle")
    wait_for(lambda: user.config_map(ns, second_cm) is None, timeout=10, message="handle deletion removes ConfigMap")

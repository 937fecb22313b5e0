"""Upstream parity on the running stack: behaviours existing upstream providers rely on, and edge cases.

Each scenario is written from docs/behaviour.md as a user or an administrator drives it with the official client:
templated lifespans without ``template.enable`` (docs/behaviour.md#resources, #lifespans), a timezone-aware
``now(true)`` in a validation check (docs/behaviour.md#template-filters-and-globals), linked providers whose base
resource has a generated name (docs/behaviour.md#linked-providers, #binding), and the ignore/pool/empty-spec/clamp edge
cases (docs/behaviour.md#triggers-and-finalizers, #propagation, #pools). The managed resources are of a custom kind
(``Widget``) whose CRD each scenario creates, because upstream's scenarios read and patch ``spec.vars`` of the managed
resource.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kubernetes import client

from stack.local import LocalStack
from tests.e2e.provider_support import NS, V1, D, User, condition, parse, status, timestamp
from tests.waiting import wait_for

IGNORE = f"{D}/ignore"


def provider_ref(name: str) -> dict[str, str]:
    return {"apiVersion": V1, "kind": "ResourceProvider", "name": name, "namespace": NS}


def widget_api(user: User, ns: str) -> str:
    """A namespaced ``Widget`` CRD in a group of the scenario's own (schema-less), which Poolboy may manage; returns
    its apiVersion."""
    group = f"{ns}.example.com"
    user.stack.grant({"apiGroups": [group], "resources": ["widgets"]})
    client.ApiextensionsV1Api(user.custom.api_client).create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]}})
    return f"{group}/v1"


def widgets(user: User, api_version: str, ns: str) -> list[dict[str, Any]]:
    group, version = api_version.split("/")
    return user.custom.list_namespaced_custom_object(group, version, ns, "widgets")["items"]


def patch_widget(user: User, api_version: str, ns: str, name: str, patch: dict[str, Any]) -> None:
    group, version = api_version.split("/")
    user.custom.patch_namespaced_custom_object(group, version, ns, "widgets", name, patch)


def patch_handle(user: User, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    return user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourcehandles", name, patch)


def handle_of(claim: dict[str, Any]) -> str:
    return status(claim)["resourceHandle"]["name"]


def handle_end(user: User, name: str) -> str | None:
    return (((user.get_handle(name) or {}).get("spec") or {}).get("lifespan") or {}).get("end")


def widget_provider(api_version: str, ns: str, **spec: Any) -> dict[str, Any]:
    return {"override": {"apiVersion": api_version, "kind": "Widget", "metadata": {"namespace": ns}},
            "healthCheck": "true", "readinessCheck": "true", **spec}


def wait_warning(user: User, ns: str, name: str, reason: str) -> Any:
    return wait_for(lambda: next((e for e in user.events(ns, name) if e.reason == reason and e.type == "Warning"),
                                 None), timeout=10, interval=0.1, message=f"Warning Event {reason} on {ns}/{name}")


# --- item 1: lifespan strings are templates whether or not template.enable is set (docs/behaviour.md#resources,
# #lifespans) ------------------


def _extended(long: str, short: str) -> str:
    return ("{%- if 'extended-lifespan' in resource_claim.annotations -%}" + long
            + "{%- else -%}" + short + "{%- endif -%}")


def test_lifespan_strings_are_templates_without_template_enable(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("lifetpl")
    api = widget_api(user, ns)
    provider = f"{ns}-p"
    user.provider(provider, widget_provider(api, ns, lifespan={
        "default": _extended("12h", "30m"), "maximum": _extended("2d", "2h"),
        "relativeMaximum": _extended("1d", "1h")}))
    resources = [{"provider": {"name": provider}, "template": {"spec": {"vars": {}}}}]
    user.claim(ns, "plain", {"resources": resources})
    user.claim(ns, "extended", {"resources": resources}, metadata={"annotations": {"extended-lifespan": "true"}})

    plain = user.wait_bound(ns, "plain")
    lifespan = status(plain)["lifespan"]
    assert parse(lifespan["end"]) - parse(lifespan["start"]) == timedelta(minutes=30)
    assert (lifespan["maximum"], lifespan["relativeMaximum"]) == ("2h", "1h")
    assert condition(plain, "Synced").get("status") != "False", condition(plain, "Synced")
    extended = status(user.wait_bound(ns, "extended"))["lifespan"]
    assert parse(extended["end"]) - parse(extended["start"]) == timedelta(hours=12)
    assert (extended["maximum"], extended["relativeMaximum"]) == ("2d", "1d")

    # adding the annotation re-evaluates the maximums (single-unit values, as the status schema requires)
    user.patch_claim(ns, "plain", {"metadata": {"annotations": {"extended-lifespan": "true"}}})
    claim = user.wait_claim(ns, "plain", lambda c: status(c)["lifespan"].get("maximum") == "2d",
                            message="maximums follow the annotation")
    assert status(claim)["lifespan"]["relativeMaximum"] == "1d"
    assert condition(claim, "Synced")["status"] == "True"


# --- item 2: now(true) is timezone-aware (docs/behaviour.md#template-filters-and-globals)
# --------------------------------------------------------------------


def test_now_true_is_timezone_aware_in_a_validation_check(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("nowtz")
    api = widget_api(user, ns)
    provider = f"{ns}-p"
    check = "spec.end | to_datetime('%Y-%m-%dT%H:%M:%S%z') - now(true) < maximum_interval | parse_time_interval"
    user.provider(provider, widget_provider(api, ns, vars={"maximum_interval": "1h"}, template={"enable": True},
                                            validation={"checks": [{"name": "end-within-maximum-interval",
                                                                    "check": check}]}))
    user.claim(ns, "c", {"resources": [{"provider": {"name": provider},
                                        "template": {"spec": {"end": timestamp(timedelta(seconds=60))}}}]})
    claim = user.wait_bound(ns, "c")
    assert "validationError" not in status(claim)["resources"][0], status(claim)["resources"][0]
    handle = handle_of(claim)

    user.patch_claim(ns, "c", {"spec": {"resources": [{"provider": provider_ref(provider), "template": {
        "spec": {"end": timestamp(timedelta(minutes=80))}}}]}})
    claim = user.wait_claim(ns, "c", lambda c: status(c)["resources"][0].get("validationError"),
                            message="the update is refused")
    assert status(claim)["resources"][0]["validationError"] == \
        "Validation check failed: end-within-maximum-interval"
    assert condition(claim, "Synced")["reason"] == "ValidationFailed"
    template = user.get_handle(handle)["spec"]["resources"][0]["template"]
    assert parse(template["spec"]["end"]) < parse(timestamp(timedelta(minutes=2)))  # the change never reached it


# --- item 3: linked providers whose base resource has a generated name (docs/behaviour.md#linked-providers, #binding)
# ---------------------------------


def linked_providers(user: User, ns: str) -> tuple[str, str, str]:
    """Upstream's test-base (generated name) and test-linked (waits for ``test_value`` on the base resource)."""
    api = widget_api(user, ns)
    base, linked = f"{ns}-base", f"{ns}-linked"
    user.provider(base, {
        "override": {"apiVersion": api, "kind": "Widget",
                     "metadata": {"generateName": f"{base}-", "namespace": ns}},
        "template": {"enable": True}})
    user.provider(linked, {
        "linkedResourceProviders": [{"name": base, "waitFor": "test_value is defined", "templateVars": [
            {"name": "test_value", "from": "/spec/vars/provision_vars/test_value"}]}],
        "override": {"apiVersion": api, "kind": "Widget",
                     "metadata": {"generateName": f"{linked}-", "namespace": ns},
                     "spec": {"vars": {"test_value": "{{ test_value }}"}}},
        "template": {"enable": True}})
    return api, base, linked


def base_then_linked(user: User, api: str, ns: str, name: str) -> dict[str, Any]:
    """The base resource mirrored while the linked one waits; after the patch, the linked one appears."""
    claim = user.wait_claim(ns, name, lambda c: len(status(c).get("resources") or []) == 2
                            and (status(c)["resources"][0].get("state") or {}).get("metadata")
                            and status(c)["resources"][1].get("waitingFor") == "Linked ResourceProvider",
                            message="base mirrored, linked waiting")
    base_name = status(claim)["resources"][0]["state"]["metadata"]["name"]
    assert [w["metadata"]["name"] for w in widgets(user, api, ns)] == [base_name]

    patch_widget(user, api, ns, base_name, {"spec": {"vars": {"provision_vars": {"test_value": "foo"}}}})
    claim = user.wait_claim(ns, name, lambda c: (status(c)["resources"][1].get("state") or {}).get("spec"),
                            timeout=8, message="linked resource created and mirrored")
    assert status(claim)["resources"][1]["state"]["spec"]["vars"]["test_value"] == "foo"
    assert "waitingFor" not in status(claim)["resources"][1]
    return claim


def test_linked_provider_waits_for_a_base_resource_with_a_generated_name(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("linkgen")
    api, base, linked = linked_providers(user, ns)
    user.claim(ns, "c", {"resources": [{"provider": {"name": base}}, {"provider": {"name": linked}}]})
    claim = base_then_linked(user, api, ns, "c")
    assert status(claim)["resources"][0]["state"]["metadata"]["name"].startswith(f"{base}-")
    assert status(claim)["resources"][1]["state"]["metadata"]["name"].startswith(f"{linked}-")


def test_a_hand_made_one_resource_handle_is_bound_and_extended_with_the_linked_resource(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("linkhand")
    api, base, linked = linked_providers(user, ns)
    handle = f"guid-{ns}"
    user.custom.create_namespaced_custom_object(D, "v1", NS, "resourcehandles", {
        "apiVersion": V1, "kind": "ResourceHandle", "metadata": {"name": handle, "namespace": NS},
        "spec": {"resources": [{"provider": provider_ref(base)}]}})
    wait_for(lambda: len(widgets(user, api, ns)) == 1, timeout=15, message="the handle's base resource")

    user.claim(ns, "c", {"resources": [{"provider": {"name": base}}, {"provider": {"name": linked}}]})
    claim = base_then_linked(user, api, ns, "c")
    assert handle_of(claim) == handle
    assert len(user.get_handle(handle)["spec"]["resources"]) == 2
    assert len(widgets(user, api, ns)) == 2


# --- item 4: edge cases (docs/behaviour.md#triggers-and-finalizers, #propagation, #pools)
# -------------------------------------------------------------------------


def test_an_ignored_unbound_handle_does_not_count_in_its_pool(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("igpool")
    api = widget_api(user, ns)
    provider, pool = f"{ns}-p", f"{ns}-pool"
    user.provider(provider, widget_provider(api, ns, template={"enable": True, "definition": {"spec": {}}}))
    user.pool(pool, {"minAvailable": 2, "provider": {"name": provider, "parameterValues": {}}})
    handles = wait_for(lambda: len(user.pool_handles(pool)) == 2 and user.pool_handles(pool), timeout=15,
                       message="two pool handles")
    ignored = handles[0]["metadata"]["name"]
    labelled = patch_handle(user, ignored, {"metadata": {"labels": {IGNORE: ""}}})["metadata"]["resourceVersion"]

    def replaced() -> list[str] | None:
        names = [h["metadata"]["name"] for h in user.pool_handles(pool) if IGNORE not in h["metadata"]["labels"]]
        return names if len(names) == 2 else None

    serving = wait_for(replaced, timeout=15, message="the pool replaces the ignored handle")
    assert ignored not in serving
    pool_status = wait_for(lambda: (s := status(user.get_pool(pool))).get("resourceHandleCount", {}).get(
        "available") == 2 and {h["name"] for h in s["resourceHandles"]} == set(serving) and s,
        timeout=10, message="pool status lists only the handles it serves")
    assert ignored not in [h["name"] for h in pool_status["resourceHandles"]]
    assert user.get_handle(ignored)["metadata"]["resourceVersion"] == labelled  # Poolboy wrote nothing to it


def test_expiry_never_deletes_or_writes_an_ignored_object(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("igexp")
    api = widget_api(user, ns)
    provider = f"{ns}-p"
    user.provider(provider, widget_provider(api, ns, lifespan={"default": "1h"}))
    for name in ("ignored-claim", "ignored-handle", "control"):
        user.claim(ns, name, {"resources": [{"provider": {"name": provider}, "template": {"spec": {}}}]})
    claims = {name: user.wait_bound(ns, name) for name in ("ignored-claim", "ignored-handle", "control")}
    handles = {name: handle_of(claim) for name, claim in claims.items()}
    for name in handles:
        wait_for(lambda n=name: (status(user.get_handle(handles[n])).get("resources") or [{}])[0].get("reference"),
                 timeout=15, message=f"{name}: resource created")

    user.patch_claim(ns, "ignored-claim", {"metadata": {"labels": {IGNORE: ""}}})
    patch_handle(user, handles["ignored-handle"], {"metadata": {"labels": {IGNORE: ""}}})
    # The two handles' lifespans end while Poolboy may not act on them: an administrator ends them on the handles
    # (a claim's change does not propagate while the claim or its handle is ignored), and the ignored claim's user
    # ends it on the claim too, so that it still wants to end once resumed. The control claim ends last.
    end = timestamp(timedelta(seconds=2))
    user.patch_claim(ns, "ignored-claim", {"spec": {"lifespan": {"end": end}}})
    frozen = {"ignored-claim": user.get_claim(ns, "ignored-claim")["metadata"]["resourceVersion"]}
    for name in ("ignored-claim", "ignored-handle"):
        frozen[name + "/handle"] = patch_handle(user, handles[name], {"spec": {"lifespan": {"end": end}}})[
            "metadata"]["resourceVersion"]
    user.patch_claim(ns, "control", {"spec": {"lifespan": {"end": timestamp(timedelta(seconds=3))}}})
    user.wait_gone(ns, "control", timeout=15)  # the expiry deadlines have been processed

    claim = user.get_claim(ns, "ignored-claim")
    assert claim is not None and claim["metadata"]["resourceVersion"] == frozen["ignored-claim"]
    for name in ("ignored-claim", "ignored-handle"):
        handle = user.get_handle(handles[name])
        assert handle is not None and handle["metadata"]["resourceVersion"] == frozen[name + "/handle"], name
    assert user.get_claim(ns, "ignored-handle") is not None
    assert len(widgets(user, api, ns)) == 2

    # resuming management lets the expiry take its course
    user.patch_claim(ns, "ignored-claim", {"metadata": {"labels": {IGNORE: None}}})
    patch_handle(user, handles["ignored-handle"], {"metadata": {"labels": {IGNORE: None}}})
    user.wait_gone(ns, "ignored-claim", timeout=15)
    user.wait_gone(ns, "ignored-handle", timeout=15)
    wait_for(lambda: not widgets(user, api, ns), timeout=15, message="expired resources deleted")


def test_empty_resources_list_is_an_invalid_spec(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("emptyres")
    user.claim(ns, "c", {"resources": []})
    claim = user.wait_claim(ns, "c", lambda c: condition(c, "Synced").get("reason") == "InvalidSpec",
                            message="Synced=False InvalidSpec")
    synced = condition(claim, "Synced")
    assert synced["status"] == "False"
    assert "spec.resources" in synced["message"] and "at least one" in synced["message"], synced
    assert wait_warning(user, ns, "c", "InvalidSpec").message == synced["message"]
    assert "resourceHandle" not in status(claim)
    assert not user.handles(f"{D}/resource-claim-namespace={ns}")


def test_an_end_clamped_by_relative_maximum_is_computed_once(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("clamp")
    api = widget_api(user, ns)
    provider = f"{ns}-p"
    user.provider(provider, widget_provider(api, ns, lifespan={"default": "30m", "relativeMaximum": "1h"}))
    user.claim(ns, "c", {"resources": [{"provider": {"name": provider}, "template": {"spec": {"step": 0}}}],
                         "lifespan": {"end": timestamp(timedelta(days=1))}})
    claim = user.wait_bound(ns, "c")
    handle = handle_of(claim)
    clamped = wait_for(lambda: handle_end(user, handle), timeout=10, message="handle end")
    assert parse(clamped) <= parse(timestamp(timedelta(hours=1)))

    for step in (1, 2):  # later reconciles of the claim (each shows on the handle) leave the clamped end alone
        wait_for(lambda s=step: parse(timestamp()) >= parse(clamped) - timedelta(hours=1) + timedelta(seconds=s + 1),
                 timeout=5, interval=0.1, message="the clock moves on")
        user.patch_claim(ns, "c", {"spec": {"resources": [{"provider": provider_ref(provider),
                                                           "template": {"spec": {"step": step}}}]}})
        wait_for(lambda s=step: user.get_handle(handle)["spec"]["resources"][0]["template"]["spec"]["step"] == s,
                 timeout=10, message=f"claim change {step} reached the handle")
        assert handle_end(user, handle) == clamped

    # a new requested end is an input change: clamped again, from now
    user.patch_claim(ns, "c", {"spec": {"lifespan": {"end": timestamp(timedelta(days=2))}}})
    wait_for(lambda: handle_end(user, handle) != clamped, timeout=10, message="a new request is clamped anew")
    assert parse(clamped) < parse(handle_end(user, handle)) <= parse(timestamp(timedelta(hours=1)))
    # a request within the limits is applied exactly
    exact = timestamp(timedelta(minutes=10))
    user.patch_claim(ns, "c", {"spec": {"lifespan": {"end": exact}}})
    wait_for(lambda: handle_end(user, handle) == exact, timeout=10, message="a request within limits is exact")

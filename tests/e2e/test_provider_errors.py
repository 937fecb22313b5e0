"""An administrator's mistake in a provider is reported to the administrator, on the running stack.

Each scenario applies a broken provider and checks what the administrator sees (the provider's ``Valid``/``Ready``
conditions naming the field, one ``InvalidSpec`` Warning Event on the provider) and what a user sees (their claim
``Synced=False`` with ``ProviderInvalid`` naming the provider and the field, not ``ValidationFailed``); then the
administrator fixes the provider and both recover without the user doing anything.
"""

from __future__ import annotations

from typing import Any

import pytest

from stack.local import LocalStack
from tests.e2e.provider_support import NS, D, User, condition, config_map_provider, status
from tests.waiting import wait_for

PARAMETERS_OK = [{"name": "greeting", "allowUpdate": True, "default": {"value": "hello"},
                  "validation": {"openAPIV3Schema": {"type": "string"}}}]
PARAMETERS_BROKEN = [{"name": "greeting", "allowUpdate": True, "default": {"value": "hello"},
                      "validation": {"openAPIV3Schema": {"type": "strng"}}}]

#: id → (broken spec fields, the fix, the field path the messages must name)
SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "parameter-schema": ({"parameters": PARAMETERS_BROKEN}, {"parameters": PARAMETERS_OK},
                         "spec.parameters[0].validation.openAPIV3Schema.type: 'strng' is not valid"),
    "lifespan-default": ({"lifespan": {"default": "banana"}}, {"lifespan": {"default": "1d"}},
                         "spec.lifespan.default: invalid interval 'banana'"),
    "readiness-check": ({"readinessCheck": "data.greeting is"}, {"readinessCheck": "data.greeting is defined"},
                        "spec.readinessCheck: template syntax error"),
    "match-ignore": ({"matchIgnore": ["/data/(unclosed"]}, {"matchIgnore": ["/data/.*"]},
                     "spec.matchIgnore[0]: invalid path regex"),
}


def provider_events(user: User, name: str, reason: str) -> list[Any]:
    """Core/v1 Events about the provider, found as ``kubectl describe`` finds them (field selector on the name)."""
    events = user.core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
    return [e for e in events if e.reason == reason and e.involved_object.kind == "ResourceProvider"]


def get_provider(user: User, name: str) -> dict[str, Any]:
    return user.custom.get_namespaced_custom_object(D, "v1", NS, "resourceproviders", name)


def wait_valid(user: User, name: str, valid: bool, message: str = "") -> dict[str, Any]:
    """The provider once its ``Valid`` condition is ``valid`` for its current generation (and names ``message``)."""
    def check() -> dict[str, Any] | None:
        provider = get_provider(user, name)
        got = condition(provider, "Valid")
        current = got.get("observedGeneration") == provider["metadata"].get("generation")
        wanted = "True" if valid else "False"
        return provider if current and got.get("status") == wanted and message in got.get("message", "") else None

    return wait_for(check, timeout=15, interval=0.1, message=f"provider {name} Valid={valid}")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_broken_provider_is_reported_on_itself_and_claims_recover_when_fixed(stack: LocalStack,
                                                                             scenario: str) -> None:
    broken, fix, field = SCENARIOS[scenario]
    user = User(stack)
    ns = user.namespace(f"perr-{scenario}")
    name = f"perr-{scenario}"
    user.provider(name, config_map_provider(ns, **broken))

    provider = wait_valid(user, name, False, field)
    valid, ready = condition(provider, "Valid"), condition(provider, "Ready")
    assert valid["reason"] == "InvalidSpec" and valid["message"].startswith(field.split(":")[0])
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "InvalidSpec", valid["message"])
    warnings = wait_for(lambda: provider_events(user, name, "InvalidSpec"), timeout=10, interval=0.1,
                        message="InvalidSpec Warning Event on the provider")
    assert warnings[0].type == "Warning" and field in warnings[0].message

    user.claim(ns, "c", {"provider": {"name": name, "parameterValues": {"greeting": "hi"}}})
    claim = user.wait_claim(ns, "c", lambda c: condition(c, "Synced").get("reason") == "ProviderInvalid",
                            message="Synced=False ProviderInvalid")
    synced = condition(claim, "Synced")
    assert synced["status"] == "False"
    assert synced["message"].startswith(f"ResourceProvider {name} is invalid: {field}")
    assert not status(claim).get("resourceHandle") and not (status(claim).get("provider") or {}).get(
        "validationErrors"), "the user's input is not blamed"

    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourceproviders", name, {"spec": fix})
    provider = wait_valid(user, name, True)
    assert condition(provider, "Ready")["status"] == "True"
    user.wait_claim(ns, "c", lambda c: condition(c, "Ready").get("status") == "True"
                    and condition(c, "Synced").get("status") == "True", message="bound and Ready after the fix")
    warnings = provider_events(user, name, "InvalidSpec")
    assert len(warnings) == 1 and (warnings[0].count or 1) == 1, "one Warning per change, not one per run"


def test_pool_of_a_broken_or_missing_provider_says_so(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("perr-pool")
    user.pool("perr-pool-missing", {"minAvailable": 0, "provider": {"name": "perr-pool-nobody"}})
    user.provider("perr-pool-p", config_map_provider(ns, lifespan={"default": "banana"}))
    user.pool("perr-pool", {"minAvailable": 1, "provider": {"name": "perr-pool-p"}})

    def synced(pool: str, reason: str) -> dict[str, Any] | None:
        got = condition(user.get_pool(pool) or {}, "Synced")
        return got if got.get("reason") == reason else None

    missing = wait_for(lambda: synced("perr-pool-missing", "ProviderNotFound"), timeout=15, interval=0.1,
                       message="pool Synced=False ProviderNotFound although it needs no handle")
    assert missing["status"] == "False" and "perr-pool-nobody" in missing["message"]
    broken = wait_for(lambda: synced("perr-pool", "ProviderInvalid"), timeout=15, interval=0.1,
                      message="pool Synced=False ProviderInvalid")
    assert "ResourceProvider perr-pool-p is invalid: spec.lifespan.default" in broken["message"]
    assert user.pool_handles("perr-pool") == []

    user.custom.patch_namespaced_custom_object(D, "v1", NS, "resourceproviders", "perr-pool-p",
                                               {"spec": {"lifespan": {"default": "1d"}}})
    wait_for(lambda: synced("perr-pool", "Synced"), timeout=15, interval=0.1, message="pool in sync after the fix")
    wait_for(lambda: len(user.pool_handles("perr-pool")) == 1, timeout=15, interval=0.1, message="pool refilled")

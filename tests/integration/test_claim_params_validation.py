"""Claim validation (docs/behaviour.md#resource-validation), parameters (docs/behaviour.md#parameters) and approval
(docs/behaviour.md#approval) through the claim reconciler."""

from __future__ import annotations

from typing import Any

from poolboy.result import PermanentError
from tests.integration.claim_support import ClaimEnv, env_fixture  # noqa: F401 - env_fixture provides "env"

SIZE_SCHEMA = {"type": "object", "properties": {"data": {"type": "object", "additionalProperties": False,
                                                         "properties": {"size": {"type": "string",
                                                                                 "enum": ["s", "m"]}}}}}


def _resources_claim(env: ClaimEnv, template: dict[str, Any]) -> None:
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": template}]})


def _set_template(env: ClaimEnv, template: dict[str, Any]) -> None:
    claim = env.get_claim("c")
    resources = claim["spec"]["resources"]
    resources[0]["template"] = template
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"spec": {"resources": resources}})


# --- docs/behaviour.md#resource-validation
# ---------------------------------------------------------------------------------------------------------


def test_schema_violation_sets_validation_error_and_blocks_binding(env: ClaimEnv) -> None:
    env.configmap_provider("p", validation={"openAPIV3Schema": SIZE_SCHEMA})
    _resources_claim(env, {"data": {"size": "xl"}})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError) and outcome.reason == "ValidationFailed"
    status = env.get_claim("c")["status"]
    assert "xl" in status["resources"][0]["validationError"]
    assert "resourceHandle" not in status
    assert env.handles() == []


def test_false_check_message(env: ClaimEnv) -> None:
    env.configmap_provider("p", validation={"checks": [{"name": "small", "check": "data.size == 's'"}]})
    _resources_claim(env, {"data": {"size": "m"}})
    env.converge("c")
    assert env.get_claim("c")["status"]["resources"][0]["validationError"] == "Validation check failed: small"


def test_raising_check_message(env: ClaimEnv) -> None:
    env.configmap_provider("p", validation={"checks": [{"name": "boom", "check": "1 / 0"}]})
    _resources_claim(env, {"data": {"size": "m"}})
    env.converge("c")
    message = env.get_claim("c")["status"]["resources"][0]["validationError"]
    assert message.startswith('Validation check "boom" failed with exception: ')


def test_validation_error_is_removed_once_valid_and_claim_then_binds(env: ClaimEnv) -> None:
    env.configmap_provider("p", validation={"openAPIV3Schema": SIZE_SCHEMA})
    _resources_claim(env, {"data": {"size": "xl"}})
    env.converge("c")
    _set_template(env, {"data": {"size": "s"}})
    env.converge("c")
    status = env.get_claim("c")["status"]
    assert "validationError" not in status["resources"][0]
    assert status["resourceHandle"]["name"].startswith("guid-")


def test_invalid_change_after_bind_does_not_update_the_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p", validation={"openAPIV3Schema": SIZE_SCHEMA})
    _resources_claim(env, {"data": {"size": "s"}})
    env.converge("c")
    _set_template(env, {"data": {"size": "xl"}})
    env.converge("c")
    assert env.claim_handle("c")["spec"]["resources"][0]["template"]["data"]["size"] == "s"


def test_provider_validation_not_applied_in_provider_mode(env: ClaimEnv) -> None:
    env.configmap_provider("p", validation={"checks": [{"name": "never", "check": "false"}]})
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]


# --- docs/behaviour.md#parameters
# ---------------------------------------------------------------------------------------------------------

PARAMS = [
    {"name": "size", "allowUpdate": False, "default": {"value": "s"},
     "validation": {"openAPIV3Schema": {"type": "string", "enum": ["s", "m", "l"]}}},
    {"name": "count", "allowUpdate": True, "validation": {"openAPIV3Schema": {"type": "integer", "default": 1},
                                                          "checks": [{"name": "small", "check": "value < 5"}]}},
    {"name": "token", "default": {"template": "fixed-{{ resource_claim.name }}"}},
]


def _param_provider(env: ClaimEnv, parameters: list[dict[str, Any]] | None = None) -> None:
    env.configmap_provider("p", parameters=parameters or PARAMS,
                           template={"definition": {"data": {"size": "{{ size }}"}}})


def _set_values(env: ClaimEnv, values: dict[str, Any]) -> None:
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns,
                         {"spec": {"provider": {"name": "p", "parameterValues": values}}})


def _errors(env: ClaimEnv) -> list[str] | None:
    return env.get_claim("c")["status"]["provider"].get("validationErrors")


def test_effective_parameter_values_apply_defaults(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"count": 2}}})
    env.converge("c")
    status = env.get_claim("c")["status"]
    assert status["provider"] == {"name": "p", "parameterValues": {"size": "s", "count": 2, "token": "fixed-c"}}
    assert env.claim_handle("c")["spec"]["provider"] == status["provider"]


def test_parameter_schema_failure_message_and_not_stored(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"size": "xxl"}}})
    outcome = env.claim_outcome(env.converge("c"), "c")
    assert isinstance(outcome, PermanentError)
    errors = _errors(env)
    assert errors and errors[0].startswith("Parameter size schema validation failed: ")
    assert "parameterValues" not in env.get_claim("c")["status"]["provider"]
    assert env.handles() == []


def test_invalid_first_value_can_be_corrected(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"size": "xxl"}}})
    env.converge("c")
    _set_values(env, {"size": "m"})
    env.converge("c")
    status = env.get_claim("c")["status"]
    assert "validationErrors" not in status["provider"]
    assert status["provider"]["parameterValues"]["size"] == "m"


def test_parameter_check_failure_message(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"count": 9}}})
    env.converge("c")
    assert _errors(env) == ["Parameter count failed check: small"]


def test_immutable_parameter_change_is_refused_and_handle_keeps_old_values(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"size": "s"}}})
    env.converge("c")
    _set_values(env, {"size": "m"})
    env.converge("c")
    assert _errors(env) == ["Parameter size is immutable."]
    assert env.get_claim("c")["status"]["provider"]["parameterValues"]["size"] == "s"
    assert env.claim_handle("c")["spec"]["provider"]["parameterValues"]["size"] == "s"


def test_updatable_parameter_change_flows_to_the_handle(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"count": 1}}})
    env.converge("c")
    _set_values(env, {"count": 3})
    env.converge("c")
    assert env.claim_handle("c")["spec"]["provider"]["parameterValues"]["count"] == 3


def test_required_parameter_missing_message(env: ClaimEnv) -> None:
    _param_provider(env, [{"name": "owner", "required": True}])
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    assert _errors(env) == ["Parameter owner is required."]


def test_unknown_parameter_message_and_removal_clears_it(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"colour": "red"}}})
    env.converge("c")
    assert _errors(env) == ["No such parameter colour."]
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns,
                         {"spec": {"provider": {"parameterValues": {"colour": None}}}})
    env.converge("c")
    assert _errors(env) is None


def test_parameter_with_default_added_later_does_not_trip_immutability(env: ClaimEnv) -> None:
    _param_provider(env, [{"name": "size", "default": {"value": "s"}}])
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    provider = env.kube.get(env.api, "ResourceProvider", "p", env.op)
    provider["spec"]["parameters"].append({"name": "zone", "default": {"value": "eu"}})
    env.kube.replace(provider)
    env.converge("c")
    status = env.get_claim("c")["status"]["provider"]
    assert "validationErrors" not in status
    assert status["parameterValues"] == {"size": "s", "zone": "eu"}


def test_value_equal_to_status_stays_valid_after_rules_change(env: ClaimEnv) -> None:
    _param_provider(env, [{"name": "size", "validation": {"openAPIV3Schema": {"type": "string"}}}])
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"size": "s"}}})
    env.converge("c")
    provider = env.kube.get(env.api, "ResourceProvider", "p", env.op)
    provider["spec"]["parameters"][0]["validation"]["openAPIV3Schema"] = {"type": "string", "enum": ["m"]}
    env.kube.replace(provider)
    env.converge("c")
    assert _errors(env) is None


def test_validation_errors_written_only_when_changed(env: ClaimEnv) -> None:
    _param_provider(env)
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"colour": "red"}}})
    env.converge("c")
    rv = env.get_claim("c")["metadata"]["resourceVersion"]
    env.converge("c")
    assert env.get_claim("c")["metadata"]["resourceVersion"] == rv


# --- docs/behaviour.md#approval
# ---------------------------------------------------------------------------------------------------------


def test_approval_pending_blocks_everything_until_approved(env: ClaimEnv) -> None:
    env.configmap_provider("p", approval={"required": True})
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    status = env.get_claim("c")["status"]
    assert status["approval"] == {"state": "pending", "message": "Approval pending."}
    for key in ("lifespan", "resourceHandle", "resources", "summary"):
        assert key not in status
    assert env.handles() == []
    claim = env.get_claim("c")
    claim["status"]["approval"] = {"state": "approved"}
    env.kube.replace_status(claim)
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]


def test_approval_pending_message_from_provider_and_rejected_stays_blocked(env: ClaimEnv) -> None:
    env.configmap_provider("p", approval={"required": True, "pendingMessage": "Ask the admin."})
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    assert env.get_claim("c")["status"]["approval"]["message"] == "Ask the admin."
    claim = env.get_claim("c")
    claim["status"]["approval"] = {"state": "rejected"}
    env.kube.replace_status(claim)
    env.converge("c")
    assert env.handles() == []
    assert env.get_claim("c")["status"]["approval"]["state"] == "rejected"

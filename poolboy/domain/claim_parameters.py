"""Effective parameter values of a ``spec.provider`` claim and their validation (docs/behaviour.md#parameters).

Why a module of its own: the rules are order-sensitive (status value first, then immutability, schema, checks,
required) and the messages are part of the API. Keeping them pure — the caller passes the provider's parameter
definitions, the claim, and template variables — makes every rule unit-testable without a cluster.

The central safety property: only *validated* values are ever returned as ``values`` for the caller to store in
``status.provider.parameterValues``, so an invalid value can never later be accepted as "unchanged".
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from poolboy.utils import schema, templating

_MISSING = object()


@dataclass
class ParameterOutcome:
    """``values``: the effective values (defaults applied) when ``errors`` is empty; ``errors``: exact messages."""

    values: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors


def _default_value(parameter: dict[str, Any], variables: dict[str, Any], template_vars: dict[str, Any] | None) -> Any:
    """``default.template`` (rendered once, the caller persists it), else ``default.value``, else schema default."""
    default = parameter.get("default") or {}
    if default.get("template") is not None:
        return templating.render(default["template"], variables, template_vars)
    if "value" in default:
        return copy.deepcopy(default["value"])
    param_schema = (parameter.get("validation") or {}).get("openAPIV3Schema") or {}
    if "default" in param_schema:
        return copy.deepcopy(param_schema["default"])
    return _MISSING


def _check_value(name: str, value: Any, parameter: dict[str, Any], check_variables: dict[str, Any],
                 template_vars: dict[str, Any] | None) -> list[str]:
    """Schema then checks for one value; messages exactly as docs/behaviour.md#parameters states them."""
    validation = parameter.get("validation") or {}
    param_schema = validation.get("openAPIV3Schema")
    if param_schema:
        messages = schema.validate_value(value, param_schema)
        if messages:
            return [f"Parameter {name} schema validation failed: {messages[0]}"]
    for entry in validation.get("checks") or []:
        check_name = entry.get("name", "")
        try:
            ok = templating.check(entry.get("check", ""), {**check_variables, "value": value}, template_vars)
        except Exception as error:
            return [f"Parameter {name} exception on check {check_name}: {templating.error_text(error)}"]
        if not ok:
            return [f"Parameter {name} failed check: {check_name}"]
    return []


def check_given(parameters: list[dict[str, Any]], given: dict[str, Any] | None, *,
                context_variables: dict[str, Any], template_vars: dict[str, Any] | None = None) -> list[str]:
    """Schema and check errors of the values ``given`` for defined parameters, nothing else (no defaults, no
    required or immutability rules): what a pool's ``parameterValues`` must pass before handles are made from them."""
    given = given or {}
    defined: dict[str, Any] = {p["name"]: p for p in parameters if p.get("name")}
    check_variables = {**given, **context_variables}
    errors: list[str] = []
    for name, value in given.items():
        if name in defined:
            errors.extend(_check_value(name, value, defined[name], check_variables, template_vars))
    return errors


def evaluate(parameters: list[dict[str, Any]], spec_values: dict[str, Any] | None,
             status_values: dict[str, Any] | None, *, context_variables: dict[str, Any],
             template_vars: dict[str, Any] | None = None) -> ParameterOutcome:
    """Compute effective values and errors.

    ``status_values`` is ``None`` before the first accepted values exist (then nothing is immutable, so an invalid
    first value can be corrected). ``context_variables`` holds ``resource_claim``, ``resource_handle`` and
    ``resource_provider`` (already wrapped).
    """
    spec_values = spec_values or {}
    accepted = status_values is not None
    status_values = status_values or {}
    defined: dict[str, Any] = {p["name"]: p for p in parameters if p.get("name")}

    values: dict[str, Any] = {}
    from_spec: set[str] = set()
    errors: list[str] = []
    for name, parameter in defined.items():
        if name in spec_values:
            values[name] = spec_values[name]
            from_spec.add(name)
        elif name in status_values:
            values[name] = status_values[name]
        else:
            try:
                value = _default_value(parameter, context_variables, template_vars)
            except Exception as error:
                errors.append(f"Parameter {name} default template failed: {error}")
                continue
            if value is not _MISSING:
                values[name] = value

    check_variables = {**values, **context_variables}
    for name, parameter in defined.items():
        if name not in values:
            if parameter.get("required"):
                errors.append(f"Parameter {name} is required.")
            continue
        value = values[name]
        if name in status_values and status_values[name] == value:
            continue  # accepted earlier: valid even when the rules have changed since
        if accepted and name in from_spec and name in status_values and not parameter.get("allowUpdate"):
            errors.append(f"Parameter {name} is immutable.")
            continue
        errors.extend(_check_value(name, value, parameter, check_variables, template_vars))

    for name, value in spec_values.items():
        if name in defined:
            continue
        if name in status_values and status_values[name] == value:
            values[name] = value
            continue
        errors.append(f"No such parameter {name}.")

    if errors:
        return ParameterOutcome(values={}, errors=errors)
    return ParameterOutcome(values=values, errors=[])

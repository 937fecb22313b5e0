"""Validation of ``spec.resources`` claim templates against their providers (docs/behaviour.md#resource-validation).

Schema first (the validator's own message), then ``validation.checks[]`` as ``{{ (check) | bool }}`` with the
template's top-level keys as variables. The result is one message (or ``None``) per resource: exactly what goes to
``status.resources[i].validationError``. Pure, so it is unit-tested without a cluster.
"""

from __future__ import annotations

from typing import Any

from poolboy.utils import schema, templating


def validate_template(template: dict[str, Any] | None, validation: dict[str, Any] | None, *,
                      context_variables: dict[str, Any], template_vars: dict[str, Any] | None = None) -> str | None:
    """Return the first validation error of one claim template, or ``None`` when it is valid."""
    template = template or {}
    validation = validation or {}
    resource_schema = validation.get("openAPIV3Schema")
    if resource_schema:
        messages = schema.validate(template, resource_schema)
        if messages:
            return messages[0]
    variables = {**template, **context_variables} if isinstance(template, dict) else dict(context_variables)
    for entry in validation.get("checks") or []:
        name = entry.get("name", "")
        try:
            ok = templating.check(entry.get("check", ""), variables, template_vars)
        except Exception as error:
            return f'Validation check "{name}" failed with exception: {templating.error_text(error)}'
        if not ok:
            return f"Validation check failed: {name}"
    return None

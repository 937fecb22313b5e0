"""Health, readiness and status summary of a handle's managed resources (docs/behaviour.md#health).

Computed by the handle reconciler into the HANDLE status; the claim reconciler only mirrors it. A check that
raises gives "unknown" rather than an error, because checks are routinely written against fields that appear
only once the resource has progressed (``status.phase`` …).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from poolboy.utils import templating

log = logging.getLogger(__name__)


def evaluate_check(expression: str | None, state: Mapping[str, Any] | None, handle: Mapping[str, Any],
                   template_vars: Mapping[str, Any]) -> bool | None:
    """``{{ (expression) | bool }}`` over the resource's top-level keys and ``resource_handle``; error → None."""
    if not expression or state is None:
        return None
    variables = {**state, "resource_handle": templating.wrap_object(handle)}
    try:
        return templating.check(expression, variables, dict(template_vars))
    except templating.TemplateError as error:
        log.debug("check %r failed: %s", expression, error)
        return None


def resource_health(health_check: str | None, readiness_check: str | None, state: Mapping[str, Any] | None,
                    handle: Mapping[str, Any], template_vars: Mapping[str, Any]) -> tuple[bool | None, bool | None]:
    """``(healthy, ready)`` of one resource: no state → (None, False); unhealthy is never ready."""
    if state is None:
        return None, False
    healthy = evaluate_check(health_check, state, handle, template_vars)
    ready = evaluate_check(readiness_check, state, handle, template_vars)
    if healthy is False:
        ready = False
    return healthy, ready


def aggregate(values: Iterable[bool | None]) -> bool | None:
    """False if any is False; else None if any is None or none is True; else True (docs/behaviour.md#health)."""
    values = list(values)
    if any(v is False for v in values):
        return False
    if any(v is None for v in values) or not any(v is True for v in values):
        return None
    return True


def render_summary(template: Any, parameter_values: Mapping[str, Any] | None, handle: Mapping[str, Any],
                   resources: list[dict[str, Any]], template_vars: Mapping[str, Any]) -> Any:
    """``statusSummaryTemplate`` rendered; None when absent or when it cannot be rendered yet."""
    if template is None:
        return None
    variables = {**(parameter_values or {}), "resource_handle": templating.wrap_object(handle),
                 "resources": resources}
    try:
        return templating.render(template, variables, dict(template_vars))
    except templating.TemplateError as error:
        log.info("statusSummaryTemplate of handle %s not rendered: %s", handle["metadata"]["name"], error)
        return None

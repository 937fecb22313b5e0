"""A ResourceProvider's own spec, checked when the administrator writes it (beyond upstream: provider conditions).

Why: a broken template, an invalid schema or an unparsable lifespan in a provider is the administrator's mistake.
Found only while a claim is processed, it reached the user as if their input were wrong (``ValidationFailed: …
invalid schema``) or not at all (a readiness check that never compiles leaves claims ``Provisioning`` for ever).
This module finds those mistakes from the spec alone — nothing is rendered, no claim is needed — so the provider
reconciler reports them on the provider and claims and pools report ``ProviderInvalid`` instead.

What is checked, each problem naming its field path (``spec.parameters[0].validation.openAPIV3Schema.type: …``):

- every template compiles in the sandbox (:func:`poolboy.utils.templating.syntax_error`): ``template.definition``,
  ``default`` and ``override`` (when ``template.enable``), ``statusSummaryTemplate``, ``vars``, parameter
  ``default.template``, link ``parameterValues``; and every condition compiles as ``{{ (check) | bool }}``:
  ``healthCheck``, ``readinessCheck``, ``validation.checks``, parameter checks, link ``when`` and ``waitFor``;
- ``validation.openAPIV3Schema`` and each parameter's schema are valid schemas (the draft-4 rules that
  :mod:`poolboy.utils.schema` validates with);
- lifespan ``default``, ``maximum``, ``relativeMaximum`` and ``unclaimed`` parse as intervals, or, when they
  are templates, compile;
- ``matchIgnore``, ``updateFilters[].pathMatch`` and ``statusRedactions[].pathMatch`` regexes compile;
- ``allowedTargets.namespaceSelector`` is a label selector;
- ``queue`` is a queue policy (:mod:`poolboy.domain.binding.queue_policy`);
- fields that must be mappings (``override``, ``template.definition``, ``default``, ``match``, …) or lists are.

Pure and cached by the spec's content, so a claim can ask on every run at the cost of one serialisation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import orjson

from poolboy.domain import resource_targets
from poolboy.domain.binding import queue_policy
from poolboy.utils import schema, templating, timeutil
from poolboy.utils.jsonpatch import path_matches

Problem = tuple[str, str]  # (field path, message)

_MAPPINGS = ("default", "match", "override", "statusSummaryTemplate", "vars", "template", "template.definition",
             "validation", "validation.openAPIV3Schema", "lifespan", "approval", "allowedTargets")
_LISTS = ("matchIgnore", "parameters", "linkedResourceProviders", "updateFilters", "statusRedactions",
          "validation.checks")
_LIFESPAN_KEYS = ("default", "maximum", "relativeMaximum", "unclaimed")


def describe(problem: Problem) -> str:
    """``<path>: <message>``, the form conditions and Events carry."""
    return f"{problem[0]}: {problem[1]}"


def problems(spec: Mapping[str, Any] | None) -> list[Problem]:
    """Every problem of a provider's ``spec``, in field order (empty when the provider is valid)."""
    try:
        key = orjson.dumps(spec or {}, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError) as error:
        return [("spec", f"not serialisable: {error}")]
    return list(_problems(key))


@lru_cache(maxsize=256)
def _problems(spec_json: bytes) -> tuple[Problem, ...]:
    spec = orjson.loads(spec_json)
    if not isinstance(spec, dict):
        return (("spec", _not_a("mapping", spec)),)
    return tuple(problem for check in CHECKS for problem in check(spec))


# --- helpers ------------------------------------------------------------------------------------------------------


def _not_a(expected: str, value: Any) -> str:
    return f"must be a {expected}, not {type(value).__name__}"


def _get(spec: Mapping[str, Any], dotted: str) -> Any:
    value: Any = spec
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _items(spec: Mapping[str, Any], field: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(path, entry)`` of each mapping entry of a list field (entries that are not mappings are reported by
    :func:`_shapes`)."""
    entries = _get(spec, field)
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict):
            yield f"spec.{field}[{index}]", entry


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string in a structure with its path (map keys are not rendered, so not checked)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _compile_all(value: Any, path: str) -> Iterator[Problem]:
    for where, text in _strings(value, path):
        error = templating.syntax_error(text)
        if error:
            yield where, error


def _condition(value: Any, path: str) -> Iterator[Problem]:
    if value in (None, ""):
        return
    error = templating.syntax_error(value, expression=True)
    if error:
        yield path, error


# --- the checks ---------------------------------------------------------------------------------------------------


def _shapes(spec: dict[str, Any]) -> Iterator[Problem]:
    """Mappings where mappings are expected, lists where lists are, and list entries that must be mappings."""
    for field in _MAPPINGS:
        value = _get(spec, field)
        if value is not None and not isinstance(value, dict):
            yield f"spec.{field}", _not_a("mapping", value)
    for field in _LISTS:
        value = _get(spec, field)
        if value is not None and not isinstance(value, list):
            yield f"spec.{field}", _not_a("list", value)
        for index, entry in enumerate(value if isinstance(value, list) else []):
            if field != "matchIgnore" and not isinstance(entry, dict):
                yield f"spec.{field}[{index}]", _not_a("mapping", entry)
    for path, parameter in _items(spec, "parameters"):
        if not parameter.get("name"):
            yield f"{path}.name", "is required"
        for field in ("default", "validation", "validation.openAPIV3Schema"):
            value = _get(parameter, field)
            if value is not None and not isinstance(value, dict):
                yield f"{path}.{field}", _not_a("mapping", value)


def _templates(spec: dict[str, Any]) -> Iterator[Problem]:
    """Structures rendered as templates compile (``default`` and ``override`` only when templating is on)."""
    enabled = bool(_get(spec, "template.enable"))
    fields = ["template.definition", "statusSummaryTemplate", "vars"] + (["default", "override"] if enabled else [])
    for field in fields:
        yield from _compile_all(_get(spec, field), f"spec.{field}")
    for path, parameter in _items(spec, "parameters"):
        yield from _compile_all(_get(parameter, "default.template"), f"{path}.default.template")
    for path, link in _items(spec, "linkedResourceProviders"):
        yield from _compile_all(link.get("parameterValues"), f"{path}.parameterValues")
    yield from _compile_all(_get(spec, "reuse.cleanupPatch"), "spec.reuse.cleanupPatch")


def _conditions(spec: dict[str, Any]) -> Iterator[Problem]:
    """Boolean expressions compile as ``{{ (expression) | bool }}``."""
    for field in ("healthCheck", "readinessCheck"):
        yield from _condition(spec.get(field), f"spec.{field}")
    for path, entry in _items(spec, "validation.checks"):
        yield from _condition(entry.get("check"), f"{path}.check")
    for path, parameter in _items(spec, "parameters"):
        checks = _get(parameter, "validation.checks")
        for index, entry in enumerate(checks if isinstance(checks, list) else []):
            if isinstance(entry, dict):
                yield from _condition(entry.get("check"), f"{path}.validation.checks[{index}].check")
    for path, link in _items(spec, "linkedResourceProviders"):
        for field in ("when", "waitFor"):
            yield from _condition(link.get(field), f"{path}.{field}")
    yield from _condition(_get(spec, "reuse.cleanedCheck"), "spec.reuse.cleanedCheck")


def _schema(value: Any, path: str) -> Iterator[Problem]:
    if not value:
        return
    error = schema.schema_error(value)
    if error:
        where, message = error
        yield (f"{path}.{where}" if where else path), message


def _schemas(spec: dict[str, Any]) -> Iterator[Problem]:
    yield from _schema(_get(spec, "validation.openAPIV3Schema"), "spec.validation.openAPIV3Schema")
    for path, parameter in _items(spec, "parameters"):
        yield from _schema(_get(parameter, "validation.openAPIV3Schema"), f"{path}.validation.openAPIV3Schema")


def _lifespans(spec: dict[str, Any]) -> Iterator[Problem]:
    """Plain values parse as intervals; templates (rendered per claim) must at least compile."""
    lifespan = spec.get("lifespan")
    if not isinstance(lifespan, dict):
        return
    for key in _LIFESPAN_KEYS:
        value = lifespan.get(key)
        path = f"spec.lifespan.{key}"
        if value in (None, ""):
            continue
        if templating.has_template(value) and key != "unclaimed":
            yield from _compile_all(value, path)
            continue
        try:
            timeutil.parse_interval(str(value).strip())
        except (ValueError, TypeError) as error:
            yield path, str(error)


def _regex(pattern: Any, path: str) -> Iterator[Problem]:
    try:
        path_matches(str(pattern), "")
    except ValueError as error:
        yield path, str(error)


def _regexes(spec: dict[str, Any]) -> Iterator[Problem]:
    patterns = spec.get("matchIgnore")
    for index, pattern in enumerate(patterns if isinstance(patterns, list) else []):
        yield from _regex(pattern, f"spec.matchIgnore[{index}]")
    for field in ("updateFilters", "statusRedactions"):
        for path, entry in _items(spec, field):
            yield from _regex(entry.get("pathMatch", ""), f"{path}.pathMatch")


def _targets(spec: dict[str, Any]) -> Iterator[Problem]:
    """``allowedTargets.namespaceSelector`` is a selector :mod:`poolboy.domain.resource_targets` evaluates."""
    targets = spec.get("allowedTargets")
    problem = resource_targets.selector_problem(targets.get("namespaceSelector")) if isinstance(targets, dict) \
        else None
    if problem:
        yield "spec.allowedTargets.namespaceSelector", problem


def _queue(spec: dict[str, Any]) -> Iterator[Problem]:
    """``spec.queue`` parses (:mod:`poolboy.domain.binding.queue_policy`)."""
    if spec.get("queue") is None:
        return
    try:
        queue_policy.parse(spec["queue"], "")
    except ValueError as error:
        path, _, message = str(error).partition(": ")
        yield path, message


CHECKS: tuple[Callable[[dict[str, Any]], Iterator[Problem]], ...] = (_shapes, _templates, _conditions, _schemas,
                                                                     _lifespans, _regexes, _targets, _queue)

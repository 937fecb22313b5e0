"""Rendering: every string of a dict/list/str structure, with lazily rendered template vars, the ``omit``
marker, and one budget per top-level render (docs/behaviour.md#templates, #template-variables).

Why users' values are data: only the template strings given to :func:`render` and the template vars are ever
rendered; variable values are never treated as templates.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from jinja2.exceptions import TemplateSyntaxError

from poolboy.utils import cancellation
from poolboy.utils.template_guards.limits import BUDGET, MAX_STRING, Budget, LimitError, new_budget
from poolboy.utils.templating.compiled import compile_template, convert, has_template
from poolboy.utils.templating.errors import TemplateError
from poolboy.utils.templating.sandbox import ENV
from poolboy.utils.templating.values import Timestamp, str2bool

MAX_VAR_DEPTH = 100  # nesting of template vars rendering other template vars (docs/behaviour.md#template-variables)
RECURSION_LIMIT = 3000  # raised to this (never lowered) so MAX_VAR_DEPTH levels fit


class _Omit:
    """Marker returned by :func:`render_string` when the whole value is ``omit`` (only at the top level)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()


class _Variables(Mapping):
    """The render context: explicit variables, then lazily rendered template vars, then per-render globals."""

    def __init__(self, variables: Mapping[str, Any], template_vars: Mapping[str, Any] | None,
                 budget: Budget):
        self._variables = variables
        self._template_vars = template_vars or {}
        self._budget = budget
        self._globals = {**ENV.globals, "timestamp": Timestamp(), "omit": budget.omit}
        self._rendered: dict[str, Any] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._variables or key in self._template_vars or key in self._globals

    def __getitem__(self, key: str) -> Any:
        if key in self._variables:
            return self._variables[key]
        if key in self._template_vars:
            if key not in self._rendered:
                self._rendered[key] = self._render_var(key)
            return self._rendered[key]
        return self._globals[key]

    def _render_var(self, key: str) -> Any:
        budget = self._budget
        if budget.var_depth >= MAX_VAR_DEPTH:
            raise LimitError(f"template variable recursion deeper than {MAX_VAR_DEPTH} levels (at {key!r})")
        budget.var_depth += 1
        try:
            return _render_value(self._template_vars[key], self)
        finally:
            budget.var_depth -= 1

    def __iter__(self) -> Iterator[str]:
        return iter({**self._globals, **dict.fromkeys(self._template_vars), **dict.fromkeys(self._variables)})

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _render_value(value: Any, context: _Variables) -> Any:
    omit = context._budget.omit
    if isinstance(value, str):
        return _render_one(value, context)
    if isinstance(value, dict):
        rendered_map = {key: _render_value(item, context) for key, item in value.items()}
        return {key: item for key, item in rendered_map.items() if item != omit}
    if isinstance(value, list):
        return [item for item in (_render_value(item, context) for item in value) if item != omit]
    return value


def _render_one(source: str, context: _Variables) -> Any:
    if not has_template(source) and "{#" not in source:
        return source
    try:
        return _render_compiled(source, context)
    except TemplateError:
        raise
    except TemplateSyntaxError as error:
        raise TemplateError(f"template syntax error in {_describe(source)}: {error}", source) from error
    except RecursionError as error:
        raise TemplateError(f"template recursion too deep in {_describe(source)}", source) from error
    except LimitError as error:
        raise TemplateError(f"template limit exceeded in {_describe(source)}: {error}", source,
                            f"template limit exceeded: {error}") from error
    except Exception as error:
        raise TemplateError(
            f"error rendering template {_describe(source)}: {type(error).__name__}: {error}", source, str(error)
        ) from error


def _render_compiled(source: str, context: _Variables) -> Any:
    template, typed = compile_template(source)
    ctx = template.new_context(context, shared=True)
    chunks: list[str] = []
    length = 0
    for chunk in template.root_render_func(ctx):
        length += len(chunk)
        if length > MAX_STRING:
            raise LimitError(f"template output larger than {MAX_STRING} characters")
        chunks.append(chunk)
    text = "".join(chunks)
    if typed is not None and text != context._budget.omit:
        return convert(text, typed)
    return text


# ---------------------------------------------------------------------------------------------------- public API


def _describe(template: Any) -> str:
    text = template if isinstance(template, str) else json.dumps(template, default=str)
    return text if len(text) <= 200 else text[:200] + "…"


def _run(template: Any, variables: Mapping[str, Any] | None, template_vars: Mapping[str, Any] | None) -> Any:
    outer = BUDGET.get()
    if outer is None:  # a top-level render is a stop point of the run (poolboy.utils.cancellation)
        cancellation.checkpoint()
    budget = outer or new_budget()
    if not budget.omit:
        budget.omit = f"__omit_place_holder__{secrets.token_hex(8)}"
    token = BUDGET.set(budget) if outer is None else None
    if sys.getrecursionlimit() < RECURSION_LIMIT:  # MAX_VAR_DEPTH nested renders take about 7 frames each
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        result = _render_value(template, _Variables(variables or {}, template_vars, budget))
    except TemplateError:
        raise
    except Exception as error:  # raised outside any one template string (e.g. by a variable mapping)
        raise TemplateError(f"error rendering {_describe(template)}: {type(error).__name__}: {error}") from error
    finally:
        if token is not None:
            BUDGET.reset(token)
    if isinstance(result, str) and result == budget.omit:
        return OMIT
    return result


def render(
    template: Any, variables: Mapping[str, Any] | None = None, template_vars: Mapping[str, Any] | None = None
) -> Any:
    """Render every string in a dict/list/str structure (dict keys are not rendered).

    Map keys and list items that render to ``omit`` are removed; a top-level ``omit`` gives :data:`OMIT`. Values
    that are not strings are returned as they are. Raises :class:`TemplateError`.
    """
    return _run(template, variables, template_vars)


def render_string(
    source: str, variables: Mapping[str, Any] | None = None, template_vars: Mapping[str, Any] | None = None
) -> Any:
    """Render one template string, applying the typed-output rule. Raises :class:`TemplateError`."""
    return _run(source, variables, template_vars)


def check(
    expression: str, variables: Mapping[str, Any] | None = None, template_vars: Mapping[str, Any] | None = None
) -> bool:
    """Evaluate a condition as ``{{ (expression) | bool }}`` (docs/behaviour.md#templates). Raises
    :class:`TemplateError`."""
    source = "{{ (" + expression + ") | bool }}"
    result = _run(source, variables, template_vars)
    return result if isinstance(result, bool) else str2bool(result)

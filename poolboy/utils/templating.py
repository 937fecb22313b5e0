"""Jinja2 templating for providers (docs/behaviour.md#templates): sandboxed, chainable-undefined, typed output, lazy
template vars.

Why it looks like this:

- **Sandbox.** Templates come from provider authors, values from users. We use Jinja's
  ``ImmutableSandboxedEnvironment`` (no ``__class__``/``__globals__``/``mro`` access, no mutation of lists and dicts
  passed in) and add resource limits (:mod:`poolboy.utils.template_guards`) so a hostile or broken template ends in
  :class:`TemplateError` quickly instead of eating the worker: every filter, method call and operator whose
  output grows with an argument is estimated *before* it runs; every container template syntax builds has a
  bounded logical size; a per-render deadline is checked at every call, attribute access, operator, filter and
  loop step; loop iterations and everything a render produces are budgeted; the output is capped.
- **Undefined.** ``ChainableUndefined`` semantics (``a.b.c | default(0)`` works) but printing an undefined value
  raises, so ``{{ missing }}`` fails loudly instead of rendering "".
- **Typed output** (docs/behaviour.md#templates): a string that is exactly one ``{{ … }}`` whose outermost expression is
a ``bool``,
  ``float``, ``int``, ``list`` or ``object`` filter keeps that type; detection works on the parsed template, not a
  regex, so ``{{ x | int + 1 }}`` stays a string.
- **Users' values are data.** Only the template strings given to :func:`render` and the template vars are ever
  rendered; variable values are never treated as templates.
- **Caching.** Compiled templates and typed-output detection are cached by source string (LRU), because every
  reconcile renders the same provider templates again.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, cast

from jinja2 import nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.runtime import ChainableUndefined, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from strgen import StringGenerator

from poolboy.utils import template_guards as guards
from poolboy.utils import timeutil
from poolboy.utils.jmespath_functions import json_query

__all__ = [
    "OMIT",
    "K8sObject",
    "TemplateError",
    "Timestamp",
    "check",
    "has_template",
    "render",
    "render_string",
    "str2bool",
    "syntax_error",
    "wrap_object",
]

MAX_VAR_DEPTH = 100  # nesting of template vars rendering other template vars (docs/behaviour.md#template-variables)
RECURSION_LIMIT = 3000  # raised to this (never lowered) so MAX_VAR_DEPTH levels fit
TYPED_FILTERS = frozenset({"bool", "float", "int", "list", "object"})

_TRUE_STRINGS = frozenset({"1", "on", "t", "true", "y", "yes"})


class TemplateError(Exception):
    """A template could not be rendered or evaluated; the message names the template and the cause.

    ``cause`` is the text of the underlying exception alone (e.g. ``division by zero``): the spec's exact messages
    for failing checks embed only that text, as upstream Poolboy does (:func:`error_text`).
    """

    def __init__(self, message: str, template: str | None = None, cause: str | None = None) -> None:
        super().__init__(message)
        self.template = template
        self.cause = cause


def error_text(error: BaseException) -> str:
    """The text a user-facing "failed with exception: <text>" message embeds: the underlying exception's own."""
    cause = getattr(error, "cause", None) if isinstance(error, TemplateError) else None
    return cause if cause else str(error)


class _Omit:
    """Marker returned by :func:`render_string` when the whole value is ``omit`` (only at the top level)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()


# ---------------------------------------------------------------------------------------------------- values


def str2bool(value: Any) -> bool:
    """Ansible-style truthiness: strings are true only for yes/y/true/t/on/1 (any case); others use ``bool``."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_STRINGS
    if isinstance(value, Undefined):
        return False
    return bool(value)


class K8sObject(dict):
    """A Kubernetes object as a template variable (docs/behaviour.md#templates): the JSON document plus upstream's
    shortcuts.

    Shortcut attributes (``name``, ``namespace``, ``uid``, ``labels``, ``annotations``, ``metadata``, ``spec``,
    ``status``, ``creation_timestamp``, ``api_version``) read from the document; missing maps are empty, so
    ``'x' in resource_claim.annotations`` works for objects without annotations. The sandbox keeps it read-only.
    """

    __slots__ = ()

    @property
    def metadata(self) -> dict:
        value = self.get("metadata")
        return value if isinstance(value, dict) else {}

    @property
    def name(self) -> str | None:
        return self.metadata.get("name")

    @property
    def namespace(self) -> str | None:
        return self.metadata.get("namespace")

    @property
    def uid(self) -> str | None:
        return self.metadata.get("uid")

    @property
    def labels(self) -> dict:
        return self.metadata.get("labels") or {}

    @property
    def annotations(self) -> dict:
        return self.metadata.get("annotations") or {}

    @property
    def creation_timestamp(self) -> str | None:
        return self.metadata.get("creationTimestamp")

    @property
    def api_version(self) -> str | None:
        return self.get("apiVersion")

    @property
    def spec(self) -> dict:
        value = self.get("spec")
        return value if isinstance(value, dict) else {}

    @property
    def status(self) -> dict:
        value = self.get("status")
        return value if isinstance(value, dict) else {}


def wrap_object(obj: Mapping | None) -> K8sObject | None:
    """Wrap a Kubernetes object (dict) for use as a template variable; ``None`` stays ``None``."""
    if obj is None or isinstance(obj, K8sObject):
        return obj
    return K8sObject(obj)


class Timestamp:
    """The ``timestamp`` global (docs/behaviour.md#template-filters-and-globals): now by default, callable to parse,
    ``.add()`` to shift."""

    def __init__(self, value: datetime | str | None = None) -> None:
        self.datetime = timeutil.utcnow() if value is None else timeutil.parse_timestamp(value)

    def __call__(self, value: Any = None) -> Timestamp:
        if isinstance(value, Timestamp):
            return Timestamp(value.datetime)
        return Timestamp(value)

    def add(self, interval: str | timedelta | int | float) -> Timestamp:
        """Shift by an interval string ("3h"), a ``timedelta``, or a number of seconds (correct behaviour)."""
        return Timestamp(self.datetime + timeutil.parse_interval(interval))

    @property
    def utcnow(self) -> Timestamp:
        return Timestamp()

    def _other(self, other: Any) -> datetime:
        if isinstance(other, Timestamp):
            return other.datetime
        return timeutil.parse_timestamp(other)

    def __eq__(self, other: object) -> bool:
        try:
            return self.datetime == self._other(other)
        except ValueError:
            return False

    def __hash__(self) -> int:
        return hash(self.datetime)

    def __lt__(self, other: Any) -> bool:
        return self.datetime < self._other(other)

    def __le__(self, other: Any) -> bool:
        return self.datetime <= self._other(other)

    def __gt__(self, other: Any) -> bool:
        return self.datetime > self._other(other)

    def __ge__(self, other: Any) -> bool:
        return self.datetime >= self._other(other)

    def __str__(self) -> str:
        return timeutil.format_timestamp(self.datetime)

    def __repr__(self) -> str:
        return f"Timestamp({self})"


class _StrictChainableUndefined(ChainableUndefined):
    """Chainable for attribute/index access and ``default``; printing it raises (docs/behaviour.md#templates)."""

    __slots__ = ()

    def __str__(self) -> str:
        self._fail_with_undefined_error()


# ---------------------------------------------------------------------------------------------------- filters


def _to_json(value: Any, indent: int | str | None = None, sort_keys: bool = False,
             separators: tuple[str, str] | None = None, ensure_ascii: bool = True) -> str:
    """``json.dumps`` with the options templates use; the output size is estimated first (indent, separators)."""
    guards.refuse_estimate("to_json", guards.json_estimate(value, indent, separators))
    return json.dumps(value, indent=indent, sort_keys=sort_keys, separators=separators,
                      ensure_ascii=ensure_ascii, default=str)


def _object(value: Any) -> str:
    return _to_json(value)


def _json_query(data: Any, expression: str) -> Any:
    guards.check_size(data)
    if len(str(expression)) > guards.MAX_EXPRESSION:
        raise guards.LimitError(f"json_query expression of {len(str(expression))} characters is too long "
                                f"(at most {guards.MAX_EXPRESSION})")
    return json_query(None if isinstance(data, Undefined) else data, expression)


def _merge_list_of_dicts(items: Iterable[Any]) -> dict:
    merged: dict = {}
    for item in items or ():
        if item is None or isinstance(item, Undefined):
            continue
        if not isinstance(item, Mapping):
            raise TypeError(f"merge_list_of_dicts: expected dicts, got {type(item).__name__}")
        merged.update(item)
    return merged


def _parse_time_interval(value: Any) -> timedelta:
    return timeutil.parse_interval(value)


_STRGEN_COUNT = re.compile(r"\{\s*(\d+)\s*(?:[:,]\s*(\d+)\s*)?\}")


@pass_context  # not a pure function: stops Jinja folding `'[a-z]{5}' | strgen` into the cached compiled template
def _strgen(context: Any, pattern: str) -> str:
    for match in _STRGEN_COUNT.finditer(pattern):
        if any(int(group) > 10_000 for group in match.groups() if group):
            raise guards.LimitError("strgen pattern repeats too much")
    rendered: str = StringGenerator(pattern).render()
    return rendered


def _to_datetime(value: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> datetime:
    return datetime.strptime(value, fmt)


def _now(utc: bool = False, fmt: str | None = None) -> datetime | str:
    """``now(true)``: timezone-aware UTC, so it subtracts from ``to_datetime(..., '...%z')`` values
    (docs/behaviour.md#template-filters-and-globals);
    ``now()``: naive local time, which pairs with naive values (``to_datetime`` without ``%z``, ``datetime.now()``).
    """
    current = timeutil.utcnow()
    value = current if utc else current.astimezone().replace(tzinfo=None)
    return value.strftime(fmt) if fmt else value


# ---------------------------------------------------------------------------------------------------- environment


class _CodeGenerator(CodeGenerator):
    """Routes loops, ``~``, block bodies and container literals through the limits of :mod:`template_guards`."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        charged = nodes.For(
            node.target,
            nodes.Call(nodes.EnvironmentAttribute("poolboy_charge"), [node.iter], [], None, None, lineno=node.lineno),
            node.body,
            node.else_,
            node.test,
            node.recursive,
            lineno=node.lineno,
        )
        charged.environment = node.environment
        super().visit_For(charged, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def _built(self, visit: Callable[[Any, Frame], None], node: Any, frame: Frame) -> None:
        self.write("environment.poolboy_built(")
        visit(node, frame)
        self.write(")")

    def visit_List(self, node: nodes.List, frame: Frame) -> None:
        self._built(super().visit_List, node, frame)

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:
        self._built(super().visit_Dict, node, frame)

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:
        if node.ctx == "load":  # a tuple target of {% for a, b in … %} or {% set a, b = … %} stays as it is
            self._built(super().visit_Tuple, node, frame)
        else:
            super().visit_Tuple(node, frame)


def _finalize(value: Any) -> Any:
    guards.check_size(value)
    return value


class _Environment(ImmutableSandboxedEnvironment):
    """The sandbox with the deadline checked at every call, attribute or item access and operator, and every
    amplifying method and operator estimated before it runs (see :mod:`poolboy.utils.template_guards`)."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})
    concat = staticmethod(guards.concat)

    def __init__(self) -> None:
        super().__init__(undefined=_StrictChainableUndefined, autoescape=False, finalize=_finalize)
        self.poolboy_charge = guards.charge_iterations
        self.poolboy_built = guards.built

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        guards.budget().tick()
        guards.check_binop(operator, left, right)
        return guards.account(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        guards.budget().tick()
        args, kwargs = guards.guard_method(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return result if any(result is arg for arg in args) else guards.account(result)

    def getattr(self, obj: Any, attribute: str) -> Any:
        guards.budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        guards.budget().tick()
        return super().getitem(obj, argument)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        """Refuse at once: Jinja's default is an undefined that only fails when printed, so ``| bool`` hid it."""
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe.")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Jinja replaces ``str.format``/``format_map`` at attribute access by a sandboxed formatter, so the call
        never reaches :meth:`call` with the bound method: estimate its result in the replacement instead."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        owner, name = value.__self__, value.__name__
        guards.check_format_string(owner)

        def guarded(*args: Any, **kwargs: Any) -> str:
            guards.budget().tick()
            guards.refuse_estimate(f"str.{name}", guards.METHOD_ESTIMATES[name](owner, args, kwargs))
            return guards.account(wrapped(*args, **kwargs))

        return guarded


def _make_environment() -> _Environment:
    env = _Environment()
    env.filters.update(
        {
            "bool": str2bool,
            "json_query": _json_query,
            "merge_list_of_dicts": _merge_list_of_dicts,
            "object": _object,
            "parse_time_interval": _parse_time_interval,
            "strgen": _strgen,
            "to_datetime": _to_datetime,
            "to_json": _to_json,
        }
    )
    for name, func in list(env.filters.items()):  # every filter, built-in or ours, runs guarded
        env.filters[name] = guards.guard_filter(name, func)
    env.globals["lipsum"] = guards.guard_lipsum(cast(Callable[..., str], env.globals["lipsum"]))
    env.globals.update({"datetime": datetime, "timedelta": timedelta, "timezone": timezone, "now": _now})
    return env


_ENV = _make_environment()


# ---------------------------------------------------------------------------------------------------- compile


def has_template(value: Any) -> bool:
    """Whether a string contains Jinja syntax (``{{`` or ``{%``) and therefore must be rendered."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


@lru_cache(maxsize=4096)
def _compile(source: str) -> tuple[Any, str | None]:
    """Compiled template and its typed-output filter name (``None`` when the output is a string)."""
    ast_root = _ENV.parse(source)
    return _ENV.from_string(ast_root), _typed_filter(ast_root)


def syntax_error(source: str, *, expression: bool = False) -> str | None:
    """Why ``source`` does not compile in the sandbox (``None`` when it does), without rendering it.

    Why: a provider's templates can be checked when the administrator writes them, not only when a claim first
    renders them. ``expression=True`` checks a condition as :func:`check` compiles it (``{{ (source) | bool }}``).
    Unknown filters and tests are compile-time errors in Jinja2, so they are found here too.
    """
    if not isinstance(source, str):
        return f"expected a string, not {type(source).__name__}"
    text = "{{ (" + source + ") | bool }}" if expression else source
    if not expression and not has_template(text) and "{#" not in text:
        return None
    try:
        _compile(text)
    except TemplateSyntaxError as error:
        return f"template syntax error: {error.message or error}" + (f" (line {error.lineno})" if not expression
                                                                      and error.lineno > 1 else "")
    except Exception as error:  # the code generator's own refusals
        return f"template does not compile: {type(error).__name__}: {error}"
    return None


def _typed_filter(root: nodes.Template) -> str | None:
    if len(root.body) != 1 or not isinstance(root.body[0], nodes.Output):
        return None
    output = root.body[0].nodes
    if len(output) != 1 or not isinstance(output[0], nodes.Filter):
        return None
    return output[0].name if output[0].name in TYPED_FILTERS else None


def _convert(text: str, typed: str) -> Any:
    try:
        if typed == "bool":
            return str2bool(text)
        if typed == "int":
            return int(text)
        if typed == "float":
            return float(text)
        try:
            return json.loads(text)
        except ValueError:
            return ast.literal_eval(text)
    except Exception:  # the spec: when the conversion fails, the string result is used
        return text


# ---------------------------------------------------------------------------------------------------- variables


class _Variables(Mapping):
    """The render context: explicit variables, then lazily rendered template vars, then per-render globals."""

    def __init__(self, variables: Mapping[str, Any], template_vars: Mapping[str, Any] | None,
                 budget: guards.Budget):
        self._variables = variables
        self._template_vars = template_vars or {}
        self._budget = budget
        self._globals = {**_ENV.globals, "timestamp": Timestamp(), "omit": budget.omit}
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
            raise guards.LimitError(f"template variable recursion deeper than {MAX_VAR_DEPTH} levels (at {key!r})")
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
    except guards.LimitError as error:
        raise TemplateError(f"template limit exceeded in {_describe(source)}: {error}", source,
                            f"template limit exceeded: {error}") from error
    except Exception as error:
        raise TemplateError(
            f"error rendering template {_describe(source)}: {type(error).__name__}: {error}", source, str(error)
        ) from error


def _render_compiled(source: str, context: _Variables) -> Any:
    template, typed = _compile(source)
    ctx = template.new_context(context, shared=True)
    chunks: list[str] = []
    length = 0
    for chunk in template.root_render_func(ctx):
        length += len(chunk)
        if length > guards.MAX_STRING:
            raise guards.LimitError(f"template output larger than {guards.MAX_STRING} characters")
        chunks.append(chunk)
    text = "".join(chunks)
    if typed is not None and text != context._budget.omit:
        return _convert(text, typed)
    return text


# ---------------------------------------------------------------------------------------------------- public API


def _describe(template: Any) -> str:
    text = template if isinstance(template, str) else json.dumps(template, default=str)
    return text if len(text) <= 200 else text[:200] + "…"


def _run(template: Any, variables: Mapping[str, Any] | None, template_vars: Mapping[str, Any] | None) -> Any:
    outer = guards.BUDGET.get()
    budget = outer or guards.new_budget()
    if not budget.omit:
        budget.omit = f"__omit_place_holder__{secrets.token_hex(8)}"
    token = guards.BUDGET.set(budget) if outer is None else None
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
            guards.BUDGET.reset(token)
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

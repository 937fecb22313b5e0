"""Compiling templates in the sandbox, cached by source string, and the typed-output rule
(docs/behaviour.md#templates).

Why the cache: every reconcile renders the same provider templates again. Why typed-output detection works on the
parsed template, not a regex: ``{{ x | int + 1 }}`` must stay a string.
"""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import TemplateSyntaxError

from poolboy.utils.templating.sandbox import ENV
from poolboy.utils.templating.values import str2bool

TYPED_FILTERS = frozenset({"bool", "float", "int", "list", "object"})


def has_template(value: Any) -> bool:
    """Whether a string contains Jinja syntax (``{{`` or ``{%``) and therefore must be rendered."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


@lru_cache(maxsize=4096)
def compile_template(source: str) -> tuple[Any, str | None]:
    """Compiled template and its typed-output filter name (``None`` when the output is a string)."""
    ast_root = ENV.parse(source)
    return ENV.from_string(ast_root), _typed_filter(ast_root)


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
        compile_template(text)
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


def convert(text: str, typed: str) -> Any:
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

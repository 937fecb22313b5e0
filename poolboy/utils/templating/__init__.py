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

The modules: :mod:`.errors` (:class:`TemplateError`), :mod:`.values` (what templates see: ``K8sObject``,
``Timestamp``, truthiness), :mod:`.filters` (Poolboy's filters and globals), :mod:`.sandbox` (the guarded
environment), :mod:`.compiled` (compiling, caching, typed output, syntax checks), :mod:`.rendering` (rendering
structures, template vars, ``omit``, conditions). This package's namespace is its public interface: callers use
``templating.render``, ``templating.check`` and the names below.
"""

from __future__ import annotations

from poolboy.utils.templating.compiled import has_template, syntax_error
from poolboy.utils.templating.errors import TemplateError, error_text
from poolboy.utils.templating.rendering import OMIT, check, render, render_string
from poolboy.utils.templating.values import K8sObject, Timestamp, str2bool, wrap_object

__all__ = [
    "OMIT",
    "K8sObject",
    "TemplateError",
    "Timestamp",
    "check",
    "error_text",
    "has_template",
    "render",
    "render_string",
    "str2bool",
    "syntax_error",
    "wrap_object",
]

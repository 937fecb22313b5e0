"""The sandboxed Jinja environment (docs/behaviour.md#templates): Jinja's ``ImmutableSandboxedEnvironment`` with the
deadline checked at every call, attribute or item access, operator, filter and loop step, every amplifying
filter, method and operator estimated before it runs, and container literals bounded
(:mod:`poolboy.utils.template_guards`); printing an undefined value raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.runtime import ChainableUndefined, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from poolboy.utils.template_guards.estimates import check_format_string
from poolboy.utils.template_guards.filters import guard_filter, guard_lipsum
from poolboy.utils.template_guards.limits import budget, charge_iterations
from poolboy.utils.template_guards.measure import account, check_size, refuse_estimate
from poolboy.utils.template_guards.methods import METHOD_ESTIMATES, guard_method
from poolboy.utils.template_guards.operators import built, check_binop
from poolboy.utils.template_guards.operators import concat as guarded_concat
from poolboy.utils.templating.filters import FILTERS, GLOBALS


class _StrictChainableUndefined(ChainableUndefined):
    """Chainable for attribute/index access and ``default``; printing it raises (docs/behaviour.md#templates)."""

    __slots__ = ()

    def __str__(self) -> str:
        self._fail_with_undefined_error()


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
    check_size(value)
    return value


class _Environment(ImmutableSandboxedEnvironment):
    """The sandbox with the deadline checked at every call, attribute or item access and operator, and every
    amplifying method and operator estimated before it runs (see :mod:`poolboy.utils.template_guards`)."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})
    concat = staticmethod(guarded_concat)

    def __init__(self) -> None:
        super().__init__(undefined=_StrictChainableUndefined, autoescape=False, finalize=_finalize)
        self.poolboy_charge = charge_iterations
        self.poolboy_built = built

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget().tick()
        check_binop(operator, left, right)
        return account(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        budget().tick()
        args, kwargs = guard_method(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return result if any(result is arg for arg in args) else account(result)

    def getattr(self, obj: Any, attribute: str) -> Any:
        budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        budget().tick()
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
        check_format_string(owner)

        def guarded(*args: Any, **kwargs: Any) -> str:
            budget().tick()
            refuse_estimate(f"str.{name}", METHOD_ESTIMATES[name](owner, args, kwargs))
            return account(wrapped(*args, **kwargs))

        return guarded


def _make_environment() -> _Environment:
    env = _Environment()
    env.filters.update(FILTERS)
    for name, func in list(env.filters.items()):  # every filter, built-in or ours, runs guarded
        env.filters[name] = guard_filter(name, func)
    env.globals["lipsum"] = guard_lipsum(cast(Callable[..., str], env.globals["lipsum"]))
    env.globals.update(GLOBALS)
    return env


ENV = _make_environment()

"""Hostile templates: each ends in a clear TemplateError (the sandbox and limits in poolboy.utils.templating).

These assert the error type and message, never the time; the limits make every case end quickly.
"""

from __future__ import annotations

import pytest

from poolboy.utils.templating import TemplateError, check, render, render_string


def _fn():
    return 1


HOSTILE = [
    ("{{ ''.__class__.__mro__ }}", {}, "unsafe"),
    ("{{ ''.__class__.__mro__[1].__subclasses__() }}", {}, "unsafe"),
    ("{{ x.__globals__ }}", {"x": _fn}, "unsafe"),
    ("{{ x.__code__ }}", {"x": _fn}, "unsafe"),
    ("{{ x.mro() }}", {"x": str}, "unsafe|undefined|mro"),
    ("{{ cycler.__init__.__globals__.os }}", {}, "unsafe"),
    ("{{ lipsum.__globals__['os'] }}", {}, "unsafe"),
    ("{{ self._TemplateReference__context }}", {}, "unsafe"),
    ("{{ ().__class__.__bases__[0] }}", {}, "unsafe"),
    ("{{ x.gi_frame }}", {"x": (i for i in [1])}, "unsafe"),
    ("{{ range(10**9) | list }}", {}, "Range too big"),
    ("{{ range(10**6) }}", {}, "Range too big"),
    ("{{ 'a' * 10**9 }}", {}, "too large"),
    ("{{ 10**9 * 'a' }}", {}, "too large"),
    ("{{ [1] * 10**9 }}", {}, "too large"),
    ("{{ (1,) * 10**9 }}", {}, "too large"),
    ("{{ 10 ** (10 ** 10) }}", {}, "too large"),
    ("{{ 7 ** 999999 }}", {}, "too large"),
    ("{{ '%999999999d' % 1 }}", {}, "format"),
    ("{{ '%*d' % (999999999, 1) }}", {}, "format"),
    ("{{ '%.999999999f' % 1 }}", {}, "format"),
    ("{{ '{:999999999}'.format(1) }}", {}, "format"),
    ("{{ '{:{}}'.format(1, 999999999) }}", {}, "format"),
    ("{{ '%999999999s' | format(1) }}", {}, "format"),
    ("{{ 'a' | center(10**9) }}", {}, "too large"),
    ("{{ 'a'.center(10**9) }}", {}, "too large"),
    ("{{ 'a'.ljust(10**9) }}", {}, "too large"),
    ("{{ 'a'.zfill(10**9) }}", {}, "too large"),
    ("{{ '\t'.expandtabs(10**9) }}", {}, "too large"),
    ("{{ 'a' | indent(10**9) }}", {}, "too large"),
    ("{{ ('a' * 100000) | replace('a', 'b' * 100000) }}", {}, "too large"),
    ("{{ ('a' * 100000).replace('a', 'b' * 100000) }}", {}, "too large"),
    ("{{ ([('a' * 100000)] * 100000) | join }}", {}, "too large"),
    ("{{ ''.join([('a' * 100000)] * 100000) }}", {}, "too large"),
    ("{{ ([('a' * 100000)] * 100000) | to_json }}", {}, "too large"),
    ("{{ ([('a' * 100000)] * 100000) | tojson }}", {}, "too large"),
    ("{{ ([('a' * 100000)] * 100000) }}", {}, "too large"),
    ("{{ ('a' * 1000000) ~ ('a' * 1000000) }}", {}, "too large"),
    ("{{ ('a' * 1000000) + ('a' * 1000000) }}", {}, "too large"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", {}, "iterations|larger"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", {}, "iterations"),
    (
        "{% set l = range(100000) | list %}{% for a in l %}{% for b in l %}{% endfor %}{% endfor %}",
        {},
        "iterations",
    ),
    ("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", {}, "larger than"),
    (
        "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        {},
        "too large",
    ),
    (
        "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}",
        {},
        "too large",
    ),
    (
        "{% set ns = namespace(s=[1]) %}{% for i in range(100) %}{% set ns.s = [ns.s, ns.s] %}{% endfor %}{{ ns.s }}",
        {},
        "too large",
    ),
    (
        "{% set ns = namespace(s=[1]) %}{% for i in range(60) %}{% set ns.s = [ns.s, ns.s] %}{% endfor %}"
        "{{ ns.s | to_json }}",
        {},
        "too large",
    ),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", {}, "recursion"),
    ("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", {}, "recursion"),
    ("{{ x.append(1) }}", {"x": []}, "unsafe"),
    ("{{ x.update({'a': 1}) }}", {"x": {}}, "unsafe"),
    ("{{ '[a-z]{999999999}' | strgen }}", {}, "strgen"),
    ("{{ ([('a' * 100000)] * 100000) | sort | length }}", {}, "too large"),
    ("{{ ([('a' * 100000)] * 100000) | unique | list | length }}", {}, "too large"),
    ("{{ ([[1] * 100000] * 100000) | sum(start=[]) | length }}", {}, "too large"),
    ("{{ ('a ' * 500000) | wordwrap(1, wrapstring='-' * 10) }}", {}, "too large"),
]


@pytest.mark.parametrize(("source", "variables", "message"), HOSTILE)
def test_hostile_template_raises_template_error(source, variables, message):
    with pytest.raises(TemplateError, match=message):
        render_string(source, variables)


@pytest.mark.parametrize(
    "template_vars",
    [
        {"a": "{{ a }}"},
        {"a": "{{ b }}", "b": "{{ c }}", "c": "{{ a }}"},
        {"a": "{{ a | int + 1 }}"},
        {"a": "{% if a %}x{% endif %}"},
    ],
)
def test_deeply_recursive_vars(template_vars):
    with pytest.raises(TemplateError, match="recursion deeper than 100"):
        render_string("{{ a }}", {}, template_vars)


def test_hostile_vars_share_one_budget():
    # each var alone is within limits, together they exceed the per-render iteration budget
    loop = "{% for i in range(100000) %}{% endfor %}"
    template_vars = {f"v{i}": loop for i in range(20)}
    source = "".join("{{ v" + str(i) + " }}" for i in range(20))
    with pytest.raises(TemplateError, match="iterations"):
        render_string(source, {}, template_vars)


def test_hostile_check_raises_template_error():
    with pytest.raises(TemplateError):
        check("''.__class__.__mro__", {})
    with pytest.raises(TemplateError):
        check("('a' * 10**9) | length > 0", {})


def test_hostile_structure_raises_template_error():
    with pytest.raises(TemplateError):
        render({"a": ["{{ [1] * 10**9 }}"]}, {})


def test_limits_do_not_hit_ordinary_templates():
    source = "{% for i in range(1000) %}{{ i }},{% endfor %}"
    assert render_string(source, {}).count(",") == 1000
    assert len(render_string("{{ 'a' * 100000 }}", {})) == 100000
    assert render_string("{{ ([1] * 1000) | length }}", {}) == "1000"
    assert render_string("{{ 2 ** 100 }}", {}) == str(2**100)


def test_budget_is_per_render():
    loop = "{% for i in range(100000) %}{% endfor %}ok"
    for _ in range(15):  # 15 × 100 000 iterations in total, but each render has its own budget
        assert render_string(loop, {}) == "ok"

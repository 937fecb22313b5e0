"""Hostile templates: each ends in a clear TemplateError (the sandbox and limits in poolboy.utils.templating).

These assert the error type and message, never the time; the limits make every case end quickly.
"""

from __future__ import annotations

import pytest

from poolboy.utils.template_guards import limits
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


@pytest.fixture()
def patient_clock(monkeypatch):
    """The wall-clock limit far away, so a test about another limit does not depend on the machine's load (on a
    busy machine the 1 s deadline can fire before the limit under test)."""
    monkeypatch.setattr(limits, "TIME_LIMIT", 60.0)


@pytest.mark.parametrize(("source", "variables", "message"), HOSTILE)
def test_hostile_template_raises_template_error(source, variables, message, request):
    if "longer" not in message:
        request.getfixturevalue("patient_clock")
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


# Amplifiers: output ≈ input × argument. Each must be refused *before* it runs: the pre-call refusals say
# "would produce" (the estimate), "value is too large" (an input's size) or "at most" (an argument's bound) —
# never "result too large", which is the check after a call.
BEFORE = "would produce|value is too large|at most"
BIG_LINES = "('a\\n' * 200000)"
MEGA = "('x' * 1000000)"
AMPLIFIERS = [
    "{{ " + BIG_LINES + " | indent(10000) | length }}",  # the reported case: 11.5 s and 3.8 GB before the fix
    "{{ " + BIG_LINES + " | indent('x' * 10000) | length }}",
    "{{ 'a' | center(10**9) }}",
    "{{ ('a' * 100000) | replace('a', 'b' * 100000) }}",
    "{{ ('%s' * 1000) | format(*([" + MEGA + "] * 1000)) }}",
    "{{ ('%(a)s' * 10000) | format(a=" + MEGA + ") }}",
    "{{ ([1] * 100000) | join(" + MEGA + ") | length }}",
    "{{ (range(100000) | map('string')) | join(" + MEGA + ") | length }}",
    "{{ ('a ' * 400000) | wordwrap(1, wrapstring='-' * 100) | length }}",
    "{{ ('a.co ' * 100000) | urlize(target='x' * 100000) | length }}",
    "{{ [1] | batch(10**9, 0) | list | length }}",
    "{{ [1] | slice(10**9) | list | length }}",
    "{{ ([[1] * 1000] * 1000) | sum(start=[]) | length }}",
    "{{ ([1] * 100000) | tojson(indent=10**6) | length }}",
    "{{ ([1] * 100000) | to_json(indent=100000) | length }}",
    "{{ {'a': " + MEGA + ", 'b': " + MEGA + "} | xmlattr | length }}",
    "{{ 'a'.ljust(10**9) }}",
    "{{ 'a'.rjust(10**9) }}",
    "{{ 'a'.zfill(10**9) }}",
    "{{ ('\\t' * 1000000).expandtabs(1000) | length }}",
    "{{ ('a' * 100000).replace('a', 'b' * 100000) }}",
    "{{ " + MEGA + ".join(['a'] * 100000) | length }}",
    "{{ " + MEGA + ".join(range(100000) | map('string')) | length }}",
    "{{ ('{0}' * 10000).format(" + MEGA + ") | length }}",
    "{{ ('{a}' * 10000).format_map({'a': " + MEGA + "}) | length }}",
    "{{ ('a' * 100000).translate({97: 'b' * 100000}) | length }}",
    "{{ (1).to_bytes(10**9, 'big') | length }}",
    "{{ ('%s' * 100000) % ((" + MEGA + ",) * 100000) }}",
    "{{ lipsum(10**6) | length }}",
    "{{ (['a'] * 100000) | json_query(\"join('\" ~ ('x' * 9000) ~ \"', @)\") | length }}",
    "{{ (['a'] * 10) | json_query('x' * 20000) }}",  # the expression itself is bounded
]


@pytest.mark.parametrize("source", AMPLIFIERS)
def test_amplifying_operation_is_refused_before_it_runs(source, patient_clock):
    with pytest.raises(TemplateError, match=BEFORE):
        render_string(source, {})


@pytest.mark.parametrize(
    "source",
    [
        "{{ ('a' * 100000) ~ ('a' * 1000000) }}",
        "{% set x %}{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}{% endset %}{{ x | length }}",
        "{% macro m() %}{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}{% endmacro %}{{ m() | length }}",
        "{% filter upper %}{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}{% endfilter %}",
    ],
)
def test_block_bodies_are_bounded_before_they_are_joined(source):
    with pytest.raises(TemplateError, match=f"{BEFORE}|produced more than"):
        render_string(source, {})


def test_many_operations_under_the_limit_cannot_add_up_to_gigabytes():
    # each center() result is under the 1 MiB limit, 100 000 of them would be 100 GB
    with pytest.raises(TemplateError, match="produced more than"):
        render_string("{{ ([1] * 100000) | map('center', 1000000) | map('length') | sum }}", {})


@pytest.mark.parametrize(
    "source",
    [
        # doubling by shared references: tiny in memory, astronomical when compared, sorted or serialised
        "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}"
        "{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}",
        "{% set ns = namespace(d={}) %}{% for i in range(60) %}{% set ns.d = {'a': ns.d, 'b': ns.d} %}{% endfor %}"
        "{{ ns.d | dictsort | length }}",
        "{{ [[[1] * 1000] * 1000] * 1000 }}",
        "{{ ([[1] * 1000] * 1000) + ([[1] * 1000] * 1000) }}",
    ],
)
def test_containers_built_by_templates_have_a_bounded_logical_size(source):
    with pytest.raises(TemplateError, match="too large"):
        render_string(source, {})


def test_deadline_holds_inside_a_long_chain_of_cheap_operations():
    # no loop and no single operation is over a limit; only the render-wide deadline stops it
    source = ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
              "{{ f(40) }}")
    with pytest.raises(TemplateError, match="longer than 1s"):
        render_string(source, {})


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ 'a\\nb' | indent(2, true) }}", "  a\n  b"),
        ("{{ 'x' | center(5) }}", "  x  "),
        ("{{ [1, 2, 3] | join(', ') }}", "1, 2, 3"),
        ("{{ range(3) | map('string') | join('-') }}", "0-1-2"),
        ("{{ '%s-%05d' | format('a', 7) }}", "a-00007"),
        ("{{ '{}:{}'.format('a', 'b') }}", "a:b"),
        ("{{ [[1], [2]] | sum(start=[]) }}", "[1, 2]"),
        ("{{ [1, 2, 3] | batch(2, 0) | list }}", [[1, 2], [3, 0]]),
        ("{{ {'a': [1]} | to_json(indent=2) }}", '{\n  "a": [\n    1\n  ]\n}'),
        ("{{ {'a': 1} | tojson }}", '{"a": 1}'),
        ("{{ 'a b c' | wordwrap(2) }}", "a\nb\nc"),
        ("{{ '7'.zfill(3) }}", "007"),
        ("{{ ','.join(['a', 'b']) }}", "a,b"),
        ("{{ lipsum(2) | wordcount > 0 }}", "True"),
        ("{% set a, b = [1, 2] %}{{ a + b }}", "3"),
        ("{% for k, v in {'a': 1} | dictsort %}{{ k }}={{ v }}{% endfor %}", "a=1"),
    ],
)
def test_ordinary_uses_of_the_guarded_operations_still_work(source, expected):
    assert render_string(source, {}) == expected


# Users' values are data, never templates (docs/behaviour.md#design-rules, rule 7): template syntax inside a value is
# printed as is.
USER_VALUES = ["{{ 7 * 7 }}", "{% for i in range(10**6) %}x{% endfor %}", "{{ ''.__class__.__mro__ }}"]


@pytest.mark.parametrize("value", USER_VALUES)
def test_user_values_passed_as_variables_are_never_rendered(value):
    assert render_string("{{ v }}", {"v": value}) == value
    assert render({"a": ["{{ v }}"], "b": "{{ obj.x }}"}, {"v": value, "obj": {"x": value}}) == \
        {"a": [value], "b": value}


@pytest.mark.parametrize("value", USER_VALUES)
def test_parameter_values_reach_the_definition_as_data(value):
    from poolboy.domain.provider import Provider

    provider = Provider({"metadata": {"name": "p", "namespace": "poolboy"},
                         "spec": {"parameters": [{"name": "greeting"}],
                                  "template": {"enable": True, "definition": {"data": {"g": "{{ greeting }}"}}}}})
    assert provider.definition(None, {"greeting": value}) == {"data": {"g": value}}

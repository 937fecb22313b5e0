"""Templating engine (docs/behaviour.md#templates): rendering, typed output, omit, undefined, filters, globals, template
vars."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from poolboy.utils import timeutil
from poolboy.utils.templating import (
    OMIT,
    K8sObject,
    TemplateError,
    Timestamp,
    check,
    has_template,
    render,
    render_string,
    str2bool,
    wrap_object,
)

CLAIM = {
    "apiVersion": "poolboy.gpte.redhat.com/v1",
    "kind": "ResourceClaim",
    "metadata": {
        "name": "test-claim",
        "namespace": "user-ns",
        "uid": "1234",
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "annotations": {"extended-lifespan": "true"},
        "labels": {"app": "demo"},
    },
    "spec": {"resources": [{"template": {"spec": {"count": 2}}}]},
    "status": {"lifespan": {"end": "2024-01-02T00:00:00Z"}},
}


@pytest.fixture()
def frozen():
    with timeutil.freeze("2024-01-01T22:00:00Z") as moment:
        yield moment


# ----------------------------------------------------------------------------------------------- basics

STRING_CASES = [
    ("plain text", {}, "plain text"),
    ("", {}, ""),
    ("{{ 1 + 1 }}", {}, "2"),
    ("{{ True }}", {}, "True"),
    ("{{ None }}", {}, "None"),
    ("{{ x }}", {"x": "hello"}, "hello"),
    ("{{ x }}", {"x": 5}, "5"),
    ("{{ x }}", {"x": {"a": 1}}, "{'a': 1}"),
    ("{{ x }}", {"x": [1, "a"]}, "[1, 'a']"),
    ("a-{{ x }}-b", {"x": 1}, "a-1-b"),
    ("{{ x }}{{ y }}", {"x": 1, "y": 2}, "12"),
    ("{{ a.b.c | default(0) }}", {}, "0"),
    ("{{ a.b.c | default('x') }}", {"a": {}}, "x"),
    ("{{ missing | default('x') }}", {}, "x"),
    ("{{ x.y }}", {"x": {"y": "z"}}, "z"),
    ("{{ x['y'] }}", {"x": {"y": "z"}}, "z"),
    ("{{ x[0] }}", {"x": ["first"]}, "first"),
    ("{% if x %}yes{% else %}no{% endif %}", {"x": True}, "yes"),
    ("{% if missing %}yes{% else %}no{% endif %}", {}, "no"),
    ("{% if a.b.c is defined %}yes{% else %}no{% endif %}", {}, "no"),
    ("{% for i in x %}{{ i }},{% endfor %}", {"x": [1, 2]}, "1,2,"),
    ("{% for i in missing %}{{ i }}{% endfor %}", {}, ""),
    ("{{ x ~ '-' ~ y }}", {"x": "a", "y": 1}, "a-1"),
    ("{{ 'a' * 3 }}", {}, "aaa"),
    ("{{ [1] * 3 }}", {}, "[1, 1, 1]"),
    ("{{ 2 ** 10 }}", {}, "1024"),
    ("{{ '%05d' % 42 }}", {}, "00042"),
    ("{{ '{:>5}'.format('x') }}", {}, "    x"),
    ("{{ 'x' | center(5) }}", {}, "  x  "),
    ("{{ 'a b' | replace(' ', '-') }}", {}, "a-b"),
    ("{{ ['a', 'b'] | join(',') }}", {}, "a,b"),
    ("{{ x | length }}", {"x": [1, 2, 3]}, "3"),
    ("{{ x | upper }}", {"x": "abc"}, "ABC"),
    ("{{ '%s-%s' | format('a', 'b') }}", {}, "a-b"),
    ("{{ range(3) | list }}", {}, [0, 1, 2]),
    ("{{ x | to_json }}", {"x": {"a": [1, True, None]}}, '{"a": [1, true, null]}'),
    ("{{ x | tojson }}", {"x": {"a": 1}}, '{"a": 1}'),
    ("{# comment #}text", {}, "text"),
    ("{% set y = x + 1 %}{{ y }}", {"x": 1}, "2"),
    ("{{ x | dict2items | length }}" if False else "{{ x | dictsort | first | first }}", {"x": {"b": 1, "a": 2}}, "a"),
]


@pytest.mark.parametrize(("source", "variables", "expected"), STRING_CASES)
def test_render_string(source, variables, expected):
    assert render_string(source, variables) == expected


# ----------------------------------------------------------------------------------------------- typed output

TYPED_CASES = [
    ("{{ x | bool }}", {"x": "false"}, False),
    ("{{ x | bool }}", {"x": "true"}, True),
    ("{{ x | bool }}", {"x": "True"}, True),
    ("{{ x | bool }}", {"x": "yes"}, True),
    ("{{ x | bool }}", {"x": "no"}, False),
    ("{{ x | bool }}", {"x": "1"}, True),
    ("{{ x | bool }}", {"x": "0"}, False),
    ("{{ x | bool }}", {"x": ""}, False),
    ("{{ x | bool }}", {"x": "on"}, True),
    ("{{ x | bool }}", {"x": 1}, True),
    ("{{ x | bool }}", {"x": 0}, False),
    ("{{ x | bool }}", {"x": None}, False),
    ("{{ missing | bool }}", {}, False),
    ("{{ x | int }}", {"x": "5"}, 5),
    ("{{ x | int }}", {"x": 5.7}, 5),
    ("{{ x | int }}", {"x": "abc"}, 0),
    ("{{ x | float }}", {"x": "1.5"}, 1.5),
    ("{{ x | float }}", {"x": 2}, 2.0),
    ("{{ x | list }}", {"x": "ab"}, ["a", "b"]),
    ("{{ x | list }}", {"x": [1, {"a": None}]}, [1, {"a": None}]),
    ("{{ x | object }}", {"x": {"a": [1, True, None]}}, {"a": [1, True, None]}),
    ("{{ x | object }}", {"x": "s"}, "s"),
    ("{{ x | object }}", {"x": 5}, 5),
    ("{{ x | object }}", {"x": None}, None),
    ("{{ [1, 2] | object }}", {}, [1, 2]),
    ("{{ (x or y) | bool }}", {"x": False, "y": True}, True),
    ("{{x|int}}", {"x": "7"}, 7),
    ("{{ x | default('3') | int }}", {}, 3),
    # not typed: the outermost expression is not one of the typed filters
    ("{{ x | int + 1 }}", {"x": "5"}, "6"),
    ("{{ x | int | string }}", {"x": "5"}, "5"),
    ("{{ x | default(1) }}", {}, "1"),
    ("{{ x | int }} ", {"x": "5"}, "5 "),
    (" {{ x | int }}", {"x": "5"}, " 5"),
    ("{{ x | int }}{{ x | int }}", {"x": "5"}, "55"),
    ("{{ x | upper }}", {"x": "true"}, "TRUE"),
    ("{% if True %}{{ x | int }}{% endif %}", {"x": "5"}, "5"),
    ("{{ x | int }}\n", {"x": "5"}, 5),  # Jinja drops one trailing newline
]


@pytest.mark.parametrize(("source", "variables", "expected"), TYPED_CASES)
def test_typed_output(source, variables, expected):
    result = render_string(source, variables)
    assert result == expected
    assert type(result) is type(expected)


# ----------------------------------------------------------------------------------------------- structures and omit


def test_render_structure_renders_values_not_keys():
    template = {"{{ k }}": "{{ v }}", "list": ["{{ v }}", 1, None, {"n": "{{ v | int }}"}], "num": 3}
    assert render(template, {"k": "K", "v": "7"}) == {"{{ k }}": "7", "list": ["7", 1, None, {"n": 7}], "num": 3}


def test_render_does_not_mutate_template():
    template = {"a": ["{{ x }}"]}
    render(template, {"x": 1})
    assert template == {"a": ["{{ x }}"]}


@pytest.mark.parametrize(
    ("template", "variables", "expected"),
    [
        ({"a": "{{ x | default(omit) }}", "b": 1}, {}, {"b": 1}),
        ({"a": "{{ x | default(omit) }}"}, {"x": "v"}, {"a": "v"}),
        (["{{ omit }}", 1, "{{ x | default(omit) }}"], {}, [1]),
        ({"a": {"b": "{{ omit }}"}}, {}, {"a": {}}),
        ({"a": "prefix {{ omit }}"}, {}, None),  # a partial omit is just text
        ("{{ omit }}", {}, OMIT),
        (5, {}, 5),
        (None, {}, None),
        (True, {}, True),
    ],
)
def test_omit(template, variables, expected):
    result = render(template, variables)
    if expected is None and isinstance(template, dict) and "a" in template:
        assert result["a"].startswith("prefix __omit_place_holder__")
    else:
        assert result == expected


def test_omit_placeholder_differs_per_render():
    first = render("{{ omit }}x")
    second = render("{{ omit }}x")
    assert first != second


def test_values_from_variables_are_never_rendered():
    # User data containing template syntax stays data (docs/behaviour.md#templates).
    assert render_string("{{ x }}", {"x": "{{ 7 * 6 }}"}) == "{{ 7 * 6 }}"
    assert render({"a": "{{ x }}"}, {"x": "{% raw %}"}) == {"a": "{% raw %}"}


# ----------------------------------------------------------------------------------------------- errors

ERROR_CASES = [
    "{{ missing }}",
    "{{ a.b.c }}",
    "{{ missing ~ 'x' }}",
    "{{ x.y }} {{ missing }}",
    "{{ 1 / 0 }}",
    "{{ }}",
    "{% if %}",
    "{{ x | nosuchfilter }}",
    "{{ nosuchfunc() }}",
    "{{ 'x' | parse_time_interval }}",
    "{{ [1, 'a'] | merge_list_of_dicts }}",
]


@pytest.mark.parametrize("source", ERROR_CASES)
def test_errors_raise_template_error_naming_the_template(source):
    with pytest.raises(TemplateError) as info:
        render_string(source, {"x": {"y": 1}})
    assert source.strip()[:10] in str(info.value)


def test_error_inside_structure_names_the_failing_string():
    with pytest.raises(TemplateError, match="nope"):
        render({"ok": "{{ 1 }}", "bad": ["{{ nope }}"]}, {})


def test_template_error_is_exception_with_template_attribute():
    assert issubclass(TemplateError, Exception)
    with pytest.raises(TemplateError) as info:
        render_string("{{ missing }}", {})
    assert info.value.template == "{{ missing }}"


# ----------------------------------------------------------------------------------------------- check

CHECK_CASES = [
    ("true", {}, True),
    ("false", {}, False),
    ("x", {"x": "false"}, False),
    ("x", {"x": "yes"}, True),
    ("x", {"x": "False"}, False),
    ("x == 1", {"x": 1}, True),
    ("a or b", {"a": False, "b": True}, True),
    ("a and b", {"a": True, "b": False}, False),
    ("spec.count < 5", {"spec": {"count": 2}}, True),
    ("spec.count < 5", {"spec": {"count": 7}}, False),
    ("missing is defined", {}, False),
    ("missing | default(true)", {}, True),
    ("'x' in resource_claim.annotations", {"resource_claim": wrap_object({"metadata": {}})}, False),
    (
        "'x' in resource_claim.annotations",
        {"resource_claim": wrap_object({"metadata": {"annotations": {"x": ""}}})},
        True,
    ),
    ("status.phase == 'Running'", {"status": {"phase": "Running"}}, True),
    ("x | length > 0", {"x": []}, False),
    ("x", {"x": ""}, False),
    ("x", {"x": 0}, False),
    ("x", {"x": [1]}, True),
]


@pytest.mark.parametrize(("expression", "variables", "expected"), CHECK_CASES)
def test_check(expression, variables, expected):
    assert check(expression, variables) is expected


@pytest.mark.parametrize("expression", ["1 / 0", "x.y(", "nosuchfunc()", "missing.x > 1 and missing + 1"])
def test_check_raises_template_error(expression):
    with pytest.raises(TemplateError):
        check(expression, {})


# ----------------------------------------------------------------------------------------- str2bool / has_template


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("yes", True),
        ("y", True),
        ("t", True),
        ("on", True),
        ("1", True),
        (" true ", True),
        ("false", False),
        ("no", False),
        ("0", False),
        ("off", False),
        ("", False),
        ("maybe", False),
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        (None, False),
        ([], False),
        ([0], True),
    ],
)
def test_str2bool(value, expected):
    assert str2bool(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("{{ x }}", True),
        ("{% if %}", True),
        ("plain", False),
        ("{ x }", False),
        ("{#c#}", False),
        (5, False),
        (None, False),
        ("a {{", True),
    ],
)
def test_has_template(value, expected):
    assert has_template(value) is expected


# ----------------------------------------------------------------------------------------------- Kubernetes objects


def test_k8s_object_behaves_as_document_and_exposes_shortcuts():
    claim = wrap_object(CLAIM)
    variables = {"resource_claim": claim}
    assert render_string("{{ resource_claim.metadata.name }}", variables) == "test-claim"
    assert render_string("{{ resource_claim['spec'].resources | length }}", variables) == "1"
    assert render_string("{{ resource_claim.name }}/{{ resource_claim.namespace }}", variables) == "test-claim/user-ns"
    assert render_string("{{ resource_claim.uid }}", variables) == "1234"
    assert render_string("{{ resource_claim.labels.app }}", variables) == "demo"
    assert render_string("{{ resource_claim.creation_timestamp }}", variables) == "2024-01-01T00:00:00Z"
    assert render_string("{{ resource_claim.kind }}", variables) == "ResourceClaim"
    assert render_string("{{ resource_claim.status.lifespan.end }}", variables) == "2024-01-02T00:00:00Z"
    assert render_string("{{ resource_claim.spec.resources[0].template.spec.count | int }}", variables) == 2
    assert (
        render_string(
            "{% if 'extended-lifespan' in resource_claim.annotations %}long{% else %}short{% endif %}", variables
        )
        == "long"
    )
    assert render_string("{{ resource_claim | object }}", variables) == CLAIM


@pytest.mark.parametrize("attribute", ["name", "namespace", "uid", "creation_timestamp"])
def test_k8s_object_missing_scalars_are_none(attribute):
    assert getattr(wrap_object({}), attribute) is None


@pytest.mark.parametrize("attribute", ["labels", "annotations", "metadata", "spec", "status"])
def test_k8s_object_missing_maps_are_empty(attribute):
    assert getattr(wrap_object({}), attribute) == {}
    assert getattr(wrap_object({"metadata": {"annotations": None, "labels": None}, "spec": None}), attribute) in (
        {},
        {"annotations": None, "labels": None},
    )


def test_k8s_object_without_annotations_in_template():
    claim = wrap_object({"metadata": {"name": "x"}})
    assert check("'extended-lifespan' in resource_claim.annotations", {"resource_claim": claim}) is False


def test_k8s_object_is_read_only_in_templates():
    claim = wrap_object({"metadata": {"name": "x"}, "spec": {}})
    with pytest.raises(TemplateError):
        render_string("{{ resource_claim.update({'a': 1}) }}", {"resource_claim": claim})
    with pytest.raises(TemplateError):
        render_string("{{ resource_claim.metadata.pop('name') }}", {"resource_claim": claim})
    assert claim == {"metadata": {"name": "x"}, "spec": {}}


def test_wrap_object():
    assert wrap_object(None) is None
    wrapped = wrap_object({"a": 1})
    assert isinstance(wrapped, K8sObject) and wrapped == {"a": 1}
    assert wrap_object(wrapped) is wrapped


# ----------------------------------------------------------------------------------------------- filters


def test_json_query_community_functions():
    data = {"a": [["k", 1], ["j", 2]], "m": {"x": 1, "y": 2}, "l1": [1, 2], "l2": ["a", "b"], "n": None, "s": "v"}
    variables = {"d": data}
    assert render_string("{{ d | json_query('from_items(a)') | object }}", variables) == {"k": 1, "j": 2}
    assert render_string("{{ d | json_query('zip(l1, l2)') | object }}", variables) == [[1, "a"], [2, "b"]]
    assert render_string("{{ d | json_query('keys(m)') | object }}", variables) == ["x", "y"]
    assert render_string("{{ d | json_query('values(m)') | object }}", variables) == [1, 2]
    assert render_string("{{ d | json_query('length(l1)') | int }}", variables) == 2
    assert render_string("{{ d | json_query('contains(l2, `\"a\"`)') | bool }}", variables) is True
    assert render_string("{{ d | json_query('n || s') }}", variables) == "v"
    assert render_string("{{ d | json_query('items(m)') | object }}", variables) == [["x", 1], ["y", 2]]


def test_json_query_on_k8s_object():
    assert render_string("{{ c | json_query('metadata.name') }}", {"c": wrap_object(CLAIM)}) == "test-claim"
    assert render_string("{{ c | json_query('keys(metadata.labels)') | object }}", {"c": wrap_object(CLAIM)}) == ["app"]


@pytest.mark.parametrize(
    ("source", "variables", "expected"),
    [
        ("{{ [] | merge_list_of_dicts | object }}", {}, {}),
        ("{{ x | merge_list_of_dicts | object }}", {"x": [{"a": 1}, None, {"b": 2}, {"a": 3}]}, {"a": 3, "b": 2}),
        ("{{ x | merge_list_of_dicts | object }}", {"x": [None]}, {}),
        ("{{ '1h' | parse_time_interval }}", {}, "1:00:00"),
        ("{{ ('1d2h' | parse_time_interval).total_seconds() | int }}", {}, 93600),
        ("{{ '2024-01-02 03:04:05' | to_datetime }}", {}, "2024-01-02 03:04:05"),
        ("{{ ('2024-01-02' | to_datetime('%Y-%m-%d')).year }}", {}, "2024"),
        ("{{ x | to_json }}", {"x": [1, "a"]}, '[1, "a"]'),
        ("{{ x | object }}", {"x": {"nested": {"list": [1, 2]}}}, {"nested": {"list": [1, 2]}}),
    ],
)
def test_filters(source, variables, expected):
    assert render_string(source, variables) == expected


@pytest.mark.parametrize(
    ("pattern", "regex"),
    [("[0-9a-f]{8}", r"^[0-9a-f]{8}$"), ("[a-z]{5}", r"^[a-z]{5}$"), ("[A-Z]{2}[0-9]{3}", r"^[A-Z]{2}[0-9]{3}$")],
)
def test_strgen(pattern, regex):
    import re

    assert re.match(regex, render_string("{{ '" + pattern + "' | strgen }}", {}))


def test_strgen_is_random():
    values = {render_string("{{ '[0-9a-f]{16}' | strgen }}", {}) for _ in range(5)}
    assert len(values) == 5


# ----------------------------------------------------------------------------------------------- globals and time


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ timestamp('2024-01-01T22:00:00Z').add('3h') }}", "2024-01-02T01:00:00Z"),
        ("{{ timestamp }}", "2024-01-01T22:00:00Z"),
        ("{{ timestamp.add('30m') }}", "2024-01-01T22:30:00Z"),
        ("{{ timestamp.add(60) }}", "2024-01-01T22:01:00Z"),
        ("{{ timestamp.add(1.5) }}", "2024-01-01T22:00:01Z"),
        ("{{ timestamp.add(timedelta(hours=3)) }}", "2024-01-02T01:00:00Z"),
        ("{{ timestamp.add('1d12h') }}", "2024-01-03T10:00:00Z"),
        ("{{ timestamp.add('-1h') }}", "2024-01-01T21:00:00Z"),
        ("{{ timestamp.utcnow }}", "2024-01-01T22:00:00Z"),
        ("{{ timestamp('2021-01-01T00:00:00Z') }}", "2021-01-01T00:00:00Z"),
        ("{{ timestamp('2021-01-01T00:00:00Z') < timestamp }}", "True"),
        ("{{ timestamp('2021-01-01T00:00:00Z') > timestamp }}", "False"),
        ("{{ timestamp >= '2024-01-01T22:00:00Z' }}", "True"),
        ("{{ timestamp <= '2024-01-01T21:00:00Z' }}", "False"),
        ("{{ timestamp == '2024-01-01T22:00:00Z' }}", "True"),
        ("{{ timestamp == 'garbage' }}", "False"),
        ("{{ timestamp.add('1h') > timestamp }}", "True"),
        ("{{ timestamp(timestamp.add('1h')) }}", "2024-01-01T23:00:00Z"),
        ("{{ now(True) }}", "2024-01-01 22:00:00+00:00"),
        ("{{ now(True, '%Y-%m-%d') }}", "2024-01-01"),
        ("{{ now(utc=True, fmt='%H:%M') }}", "22:00"),
        ("{{ (now(True) + timedelta(hours=3)).strftime('%Y-%m-%dT%H:%M:%SZ') }}", "2024-01-02T01:00:00Z"),
        ("{{ timedelta(hours=3) }}", "3:00:00"),
        ("{{ datetime(2024, 1, 1).year }}", "2024"),
        ("{{ datetime.now(timezone.utc).year > 2000 }}", "True"),
        ("{{ timestamp.datetime.year }}", "2024"),
    ],
)
def test_time_globals(frozen, source, expected):
    assert render_string(source, {}) == expected


def test_now_local_is_a_datetime(frozen):
    assert isinstance(render_string("{{ now() | object }}", {}), str)
    assert render_string("{{ now().year }}", {}) in ("2024", "2023")


@pytest.mark.parametrize(
    "source", ["{{ timestamp('yesterday') }}", "{{ timestamp.add('soon') }}", "{{ timedelta('10m') }}"]
)
def test_time_errors(frozen, source):
    with pytest.raises(TemplateError):
        render_string(source, {})


def test_timestamp_class():
    with timeutil.freeze("2024-01-01T00:00:00Z"):
        stamp = Timestamp()
        assert str(stamp) == "2024-01-01T00:00:00Z"
        assert stamp.add("1d") == Timestamp("2024-01-02T00:00:00Z")
        assert stamp.add(timedelta(seconds=5)) > stamp
        assert hash(stamp) == hash(Timestamp("2024-01-01T00:00:00Z"))
        assert repr(stamp) == "Timestamp(2024-01-01T00:00:00Z)"
        assert stamp(datetime(2020, 1, 1)).datetime.year == 2020


def test_time_follows_frozen_clock_each_render():
    with timeutil.freeze("2030-06-01T00:00:00Z"):
        assert render_string("{{ timestamp }}", {}) == "2030-06-01T00:00:00Z"
    with timeutil.freeze("2031-06-01T00:00:00Z"):
        assert render_string("{{ timestamp }}", {}) == "2031-06-01T00:00:00Z"


# ----------------------------------------------------------------------------------------------- template vars


VAR_CASES = [
    ("{{ a }}", {"a": "plain"}, "plain"),
    ("{{ a }}", {"a": 5}, "5"),
    ("{{ a | int + 1 }}", {"a": 5}, "6"),
    ("{{ a }}", {"a": "{{ 1 + 1 }}"}, "2"),
    ("{{ b }}", {"a": "x", "b": "{{ a }}-y"}, "x-y"),
    ("{{ c }}", {"a": "1", "b": "{{ a }}2", "c": "{{ b }}3"}, "123"),
    ("{{ b | length }}", {"a": [1, 2, 3], "b": "{{ a | object }}"}, "3"),
    ("{{ b | object }}", {"a": {"k": "v"}, "b": "{{ a | object }}"}, {"k": "v"}),
    ("{{ b[1] }}", {"a": [1, 2, 3], "b": "{{ a | object }}"}, "2"),
    ("{{ b.k }}", {"a": {"k": "v"}, "b": "{{ a | object }}"}, "v"),
    ("{{ 2 in b }}", {"a": [1, 2], "b": "{{ a | object }}"}, "True"),
    ("{{ a == 2 }}", {"a": "{{ 2 | int }}"}, "True"),
    ("{{ a < 3 }}", {"a": "{{ 2 | int }}"}, "True"),
    ("{{ a <= 2 }}", {"a": "{{ 2 | int }}"}, "True"),
    ("{{ a > 1.5 }}", {"a": "{{ 2 | float }}"}, "True"),
    ("{{ a >= 3 }}", {"a": "{{ 2 | int }}"}, "False"),
    ("{{ a | bool }}", {"a": "{{ 'false' | bool }}"}, False),
    ("{{ a | bool }}", {"a": "false"}, False),
    ("{{ a | int }}", {"a": "{{ '7' }}"}, 7),
    ("{{ a | float }}", {"a": "1.5"}, 1.5),
    ("{{ a }}", {"a": "{% if true %}yes{% endif %}"}, "yes"),
    ("{{ a }}", {"a": "{% for i in range(3) %}{{ i }}{% endfor %}"}, "012"),
    ("{{ a.x }}", {"a": {"x": "{{ 1 + 2 }}"}}, "3"),
    ("{{ a[0] }}", {"a": ["{{ 'first' }}"]}, "first"),
    ("{{ a }}", {"a": "{{ resource_claim.metadata.name }}"}, "test-claim"),
    ("{{ resource_claim.metadata.name }}", {"resource_claim": "overridden?"}, "test-claim"),
    ("{{ a | default('d') }}", {}, "d"),
    ("{{ s1 == s1 }}", {"s1": "{{ '[a-z]{10}' | strgen }}"}, "True"),  # rendered once per render
]


@pytest.mark.parametrize(("source", "template_vars", "expected"), VAR_CASES)
def test_template_vars(source, template_vars, expected):
    assert render_string(source, {"resource_claim": wrap_object(CLAIM)}, template_vars) == expected


def test_template_vars_in_structures_and_checks():
    template_vars = {"size": "{{ 'large' if big | bool else 'small' }}", "big": "true"}
    assert render({"spec": {"size": "{{ size }}"}}, {}, template_vars) == {"spec": {"size": "large"}}
    assert check("size == 'large'", {}, template_vars) is True


def test_explicit_variables_override_template_vars():
    assert render_string("{{ a }}", {"a": "explicit"}, {"a": "var"}) == "explicit"


def test_template_vars_are_lazy():
    # a broken var that is never used does not break the render
    assert render_string("{{ good }}", {}, {"good": "ok", "bad": "{{ missing }}"}) == "ok"


def test_broken_template_var_raises_when_used():
    with pytest.raises(TemplateError, match="missing"):
        render_string("{{ bad }}", {}, {"bad": "{{ missing }}"})


def test_template_var_depth_100_is_allowed():
    template_vars = {f"v{i}": "{{ v" + str(i + 1) + " }}" for i in range(99)}
    template_vars["v99"] = "end"
    assert render_string("{{ v0 }}", {}, template_vars) == "end"


@pytest.mark.parametrize(
    "template_vars",
    [{"a": "{{ a }}"}, {"a": "{{ b }}", "b": "{{ a }}"}, {"a": "{{ a ~ 'x' }}"}, {"a": ["{{ a }}"]}],
)
def test_recursive_template_vars_raise(template_vars):
    with pytest.raises(TemplateError, match="recursion"):
        render_string("{{ a }}", {}, template_vars)


def test_template_var_values_are_not_rendered_as_templates_twice():
    # a var renders to text containing braces; that text is data, not a template
    assert render_string("{{ a }}", {}, {"a": "{{ '{{ 1 + 1 }}' }}"}) == "{{ 1 + 1 }}"


def test_compiled_templates_are_cached():
    from poolboy.utils.templating.compiled import compile_template

    compile_template.cache_clear()
    render_string("{{ cached_x }}", {"cached_x": 1})
    render_string("{{ cached_x }}", {"cached_x": 2})
    info = compile_template.cache_info()
    assert info.misses == 1 and info.hits >= 1

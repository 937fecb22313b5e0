"""Every Lua script is a file of ``redisscripts/``, declared once beside its caller with the KEYS and ARGV its file
reads, composed only from libraries its package may use, and loadable by Redis; no Python module outside
``redisscripts/`` holds Lua, and every Redis key name comes from :mod:`workqueue.keyspace`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redisscripts import Script, source
from tests.redis_scripts import declared_scripts
from workqueue import keyspace

ROOT = Path(__file__).resolve().parents[2]
#: the libraries a script of each folder may use, by folder: a package's scripts use its own libraries and those of
#: the packages it depends on, never the other way round
MAY_USE = {"workqueue": {"workqueue"}, "cache": {"cache", "workqueue"}, "engine": {"engine", "cache", "workqueue"}}
#: the runner of combined scripts: not a script of its own (redisscripts/combined.py)
ENVELOPE = "combined"


DECLARED = declared_scripts()
LIBRARIES = sorted({used for name in source.names() for used in source.uses(name)})


def _indexes(pattern: str, text: str) -> list[int]:
    return [int(number) for number in re.findall(pattern, text)]


def _rest_starts(text: str) -> list[int]:
    """Where the file takes the list after ARGV's own from: ``unpack(ARGV, n)``, ``for i = n, #ARGV``,
    ``table.concat(ARGV, s, n)``."""
    return _indexes(r"unpack\(ARGV,\s*(\d+)", text) + _indexes(r"=\s*(\d+),\s*#ARGV", text) \
        + _indexes(r"concat\(ARGV,\s*[^,]+,\s*(\d+)\)", text)


def _code(name: str) -> str:
    """The file without its comments."""
    return re.sub(r"--[^\n]*", "", source.text(name))


def test_every_script_file_is_declared_once_and_every_declaration_has_its_file() -> None:
    files = {name for name in source.names() if name != ENVELOPE and name not in LIBRARIES}
    assert set(DECLARED) == files, "a script file nobody declares, or a declaration without its file"
    assert not set(DECLARED) & set(LIBRARIES), "a library is not a script of its own"


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_a_declaration_names_every_key_and_argument_its_file_reads(name: str) -> None:
    script, code = DECLARED[name], _code(name)
    assert max(_indexes(r"KEYS\[(\d+)\]", code), default=0) == len(script.keys), f"{name}: KEYS"
    assert max(_indexes(r"ARGV\[(\d+)\]", code), default=0) == len(script.args), f"{name}: ARGV"
    starts = set(_rest_starts(code))
    assert starts == ({len(script.args) + 1} if script.rest else set()), f"{name}: the list after ARGV's own"


@pytest.mark.parametrize("name", LIBRARIES)
def test_a_library_only_defines_functions_of_the_values_given_them(name: str) -> None:
    code = _code(name)
    assert "KEYS" not in code and "ARGV" not in code, f"{name} reads its caller's KEYS or ARGV"


@pytest.mark.parametrize("name", [name for name in source.names() if source.uses(name)])
def test_a_script_uses_only_libraries_of_its_package_or_those_it_depends_on(name: str) -> None:
    for used in source.uses(name):
        assert source.path(used).is_file(), f"{name} uses {used}, which is no file"
        assert used.split("/")[0] in MAY_USE[name.split("/")[0]], f"{name} may not use {used}"


def test_a_source_is_its_libraries_each_once_after_those_they_use_then_the_file() -> None:
    assert source.libraries("engine/settle") == ("workqueue/queue", "engine/own_writes")
    assert source.source("engine/settle") == "\n".join(source.text(name) for name in
                                                        ("workqueue/queue", "engine/own_writes", "engine/settle"))
    assert source.source("workqueue/due") == source.text("workqueue/due")


def test_libraries_that_use_each_other_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "uses", lambda name: {"a": ("b",), "b": ("c",), "c": ("b",)}.get(name, ()))
    with pytest.raises(ValueError, match="b -> c -> b"):
        source.libraries("a")


def test_a_script_name_is_a_path_under_the_package() -> None:
    for name in ("../secrets", "/etc/passwd", "workqueue/Add", ""):
        with pytest.raises(ValueError):
            source.path(name)


def test_no_python_module_outside_the_home_holds_lua() -> None:
    holding = [str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py")
               if path.relative_to(ROOT).parts[0] not in ("redisscripts", "tests", ".venv")
               and "redis.call(" in path.read_text(errors="replace")]
    assert not holding


def test_the_home_imports_nothing_of_the_project() -> None:
    project = r"^\s*(from|import) (poolboy|workqueue|cache|engine|workers|watcher|stack)\b"
    for path in (ROOT / "redisscripts").glob("*.py"):
        assert not re.search(project, path.read_text(), re.MULTILINE), path


# --- calling by name -----------------------------------------------------------------------------------------------

SAMPLE = Script("workqueue/add", keys=("first", "optional"), args=("one", "two"), rest="more")


def test_values_go_in_the_declared_order_whatever_order_they_are_given_in() -> None:
    assert SAMPLE.order({"more": [5, 6], "two": 2, "optional": "k2", "one": 1, "first": "k1"}) == \
        (["k1", "k2"], [1, 2, 5, 6])


def test_only_the_last_keys_or_arguments_may_be_left_out() -> None:
    assert SAMPLE.order({"first": "k1", "optional": None, "one": 1, "two": 2, "more": []}) == (["k1"], [1, 2])
    with pytest.raises(ValueError):
        SAMPLE.order({"first": None, "optional": "k2", "one": 1, "two": 2, "more": []})
    with pytest.raises(ValueError):
        SAMPLE.order({"first": "k1", "optional": "k2", "one": 1, "two": None, "more": []}), "not before the list"


def test_a_value_missing_or_unknown_is_refused() -> None:
    with pytest.raises(TypeError, match=r"unknown \['three'\], missing \['more'\]"):
        SAMPLE.order({"first": "k1", "optional": "k2", "one": 1, "two": 2, "three": 3})


def test_a_name_declared_twice_is_refused() -> None:
    with pytest.raises(ValueError):
        Script("workqueue/add", keys=("key",), args=("key",))


# --- one home for every key ----------------------------------------------------------------------------------------


def test_key_names_stay_what_a_running_redis_holds() -> None:
    key = "claim/ns/a"
    assert [keyspace.pending(key), keyspace.active(key), keyspace.failures(key), keyspace.LEASES, keyspace.DUE] == [
        "poolboy:queue:{claim/ns/a}:pending", "poolboy:queue:{claim/ns/a}:active",
        "poolboy:queue:{claim/ns/a}:failures", "poolboy:queue:leases", "poolboy:queue:due"]
    assert [keyspace.own_writes(key), keyspace.deferred_events(key), keyspace.logged_error(key)] == [
        "poolboy:ownwrites:{claim/ns/a}", "poolboy:ownwrites:{claim/ns/a}:deferred",
        "poolboy:runlog:{claim/ns/a}:logged"]
    assert [keyspace.CACHE_ALIVE, keyspace.CACHE_SYNCED, keyspace.cached_object("v1|Namespace||a"),
            keyspace.cache_index("unbound|s"), keyspace.EPOCH, keyspace.BEAT] == [
        "poolboy:cache:alive", "poolboy:cache:synced", "poolboy:cache:o:v1|Namespace||a", "poolboy:cache:i:unbound|s",
        "poolboy:epoch", "poolboy:beat:"]
    assert [keyspace.reservation("h"), keyspace.namespace_reservations("s", "ns")] == [
        "poolboy:cache:resv:h", "poolboy:cache:resv:ns:s|ns"]


def test_a_layout_makes_the_key_a_script_makes_of_it() -> None:
    assert keyspace.layout(keyspace.active) % "claim/ns/a" == keyspace.active("claim/ns/a")
    assert keyspace.layout(keyspace.pending) % "claim/ns/a" == keyspace.pending("claim/ns/a")


def test_no_python_module_but_the_keyspace_spells_a_key() -> None:
    spelled = re.compile(r"""["']poolboy:(queue|cache|ownwrites|runlog|epoch|beat)""")
    found = [str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py")
             if path.relative_to(ROOT).parts[0] not in ("tests", ".venv")
             and path != ROOT / "workqueue" / "keyspace.py" and spelled.search(path.read_text(errors="replace"))]
    assert not found

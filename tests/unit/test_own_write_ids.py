"""Which watch events can be a run's own write, and which writes a run records (pure parts of own writes)."""

from __future__ import annotations

import pytest

from cache.journal import RunJournal
from engine.own_writes import Collector
from poolboy.observability import Write
from watcher.mapping import write_id


def _obj(**metadata: object) -> dict:
    return {"metadata": {"uid": "u1", "resourceVersion": "7", **metadata}}


@pytest.mark.parametrize(("event_type", "expected"), [
    ("MODIFIED", "u1/7"),
    ("ADDED", "u1/7"),      # the run's own create: same uid and version as the create returned
    ("DELETED", None),      # a deletion always runs its key
    ("LISTED", None),       # a re-list must deliver everything
])
def test_event_ids(event_type: str, expected: str | None) -> None:
    assert write_id(event_type, _obj()) == expected


def test_an_object_being_deleted_is_never_an_own_write() -> None:
    assert write_id("MODIFIED", _obj(deletionTimestamp="2024-01-01T00:00:00Z")) is None


def test_a_run_records_its_creates_and_conditional_writes_only() -> None:
    collector = Collector()
    collector.add(Write("create", "a", "1"))
    collector.add(Write("patch", "b", "2", precondition="1"))
    collector.add(Write("patch", "c", "3"))  # unconditional: may return somebody else's version
    assert collector.idents == ["a/1", "b/2"]


def test_a_write_an_event_and_a_read_of_one_version_have_one_id() -> None:
    """The watcher's id of the event, the engine's of the write and the journal's of the read are the same string, so
    a run's write or read settles the event of that version."""
    journal = RunJournal()
    journal.saw(_obj())
    assert journal.seen() == [write_id("MODIFIED", _obj())] == [Write("patch", "u1", "7").ident] == ["u1/7"]
    journal.saw({"metadata": {"uid": "u2"}})
    assert journal.seen() == ["u1/7"], "no id without a resourceVersion"

"""Which managed-resource collections the watcher watches (:class:`watcher.managed.ManagedResources`): one informer
per (apiVersion, kind, namespace) that at least one handle references, started with the first reference and stopped
after the last. Informers here are recorded, not started (the factory is the class's own seam for this)."""

from __future__ import annotations

from typing import Any

from watcher.managed import ManagedResources, Target


class RecordedInformer:
    def __init__(self, log: list[tuple[str, Target]], **kwargs: Any) -> None:
        self.target = Target(kwargs["api_version"], kwargs["kind"], kwargs["namespace"])
        self.log = log

    def start(self) -> RecordedInformer:
        self.log.append(("start", self.target))
        return self

    def stop(self) -> None:
        self.log.append(("stop", self.target))


def handle(name: str, *references: tuple[str, str, str | None]) -> dict:
    return {"metadata": {"namespace": "poolboy", "name": name},
            "spec": {"resources": [{"reference": {"apiVersion": a, "kind": k, "namespace": ns}}
                                   for a, k, ns in references]}}


CM = ("v1", "ConfigMap", "apps")
ITEM = ("bench.example.com/v1", "BenchItem", "bench")


def managed() -> tuple[ManagedResources, list[tuple[str, Target]]]:
    log: list[tuple[str, Target]] = []
    return ManagedResources(kube=None, callback=lambda *_: None,  # type: ignore[arg-type]
                            informer_factory=lambda **kw: RecordedInformer(log, **kw)), log


def test_one_informer_per_referenced_collection_from_the_first_reference_to_the_last() -> None:
    resources, log = managed()
    resources.on_handle_event("ADDED", handle("a", CM))
    resources.on_handle_event("ADDED", handle("b", CM))
    assert log == [("start", Target(*CM))], "a second reference starts nothing"
    resources.on_handle_event("MODIFIED", handle("a", ITEM))
    assert log[-1] == ("start", Target(*ITEM)) and len(log) == 2, "b still references the ConfigMaps"
    resources.on_handle_event("DELETED", handle("b", CM))
    assert log[-1] == ("stop", Target(*CM))
    assert resources.targets == {Target(*ITEM)}
    resources.on_handle_event("MODIFIED", handle("a"))  # its references cleared
    assert log[-1] == ("stop", Target(*ITEM)) and resources.targets == set()


def test_an_event_that_changes_no_reference_changes_nothing() -> None:
    resources, log = managed()
    for _ in range(3):
        resources.on_handle_event("MODIFIED", handle("a", CM, ITEM))
    assert sorted(log) == sorted([("start", Target(*CM)), ("start", Target(*ITEM))])
    resources.on_handle_event("DELETED", handle("unknown"))
    assert len(log) == 2


def test_status_references_count_too_and_stop_all_stops_every_informer() -> None:
    resources, log = managed()
    with_status = handle("a")
    with_status["status"] = {"resources": [{"reference": {"apiVersion": "v1", "kind": "Secret"}}]}
    resources.on_handle_event("ADDED", with_status)
    assert resources.targets == {Target("v1", "Secret", None)}
    resources.stop_all()
    assert log[-1] == ("stop", Target("v1", "Secret", None)) and resources.targets == set()
    resources.on_handle_event("ADDED", handle("late", CM))
    assert resources.targets == set(), "a late event after stop_all starts nothing"

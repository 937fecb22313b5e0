"""The preamble's finalizer rule: cleanup only while one of our finalizers is on, then removal, then the Event."""

from __future__ import annotations

from typing import Any

from poolboy import kube
from poolboy.context import Context
from poolboy.kube.no_cluster import NoCluster
from poolboy.reconcilers import preamble
from poolboy.result import Result
from poolboy.settings import Settings

SETTINGS = Settings(operator_namespace="op")
NO_DISCOVERY = NoCluster("the preamble asks no discovery")


class RecordingKube:
    """Serves one object and records the writes and the Events the preamble makes (a pure unit test: no API server
    needed)."""

    def __init__(self, obj: dict[str, Any], gone_on_patch: bool = False) -> None:
        self.obj = obj
        self.gone_on_patch = gone_on_patch
        self.calls: list[tuple[str, Any]] = []

    def get_or_none(self, *args: Any) -> dict[str, Any]:
        return self.obj

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict[str, Any],
                    resource_version: str | None = None) -> dict[str, Any]:
        self.calls.append(("patch", patch))
        if self.gone_on_patch:
            raise kube.NotFound(404, "NotFound", "gone")
        return self.obj

    def emit(self, obj: dict[str, Any], reason: str, message: str, **_: Any) -> None:
        self.calls.append(("event", reason))


def _deleting(finalizers: list[str]) -> dict[str, Any]:
    return {"apiVersion": f"{SETTINGS.domain}/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": "7", "finalizers": finalizers,
                         "deletionTimestamp": "2030-01-01T00:00:00Z"}}


def _run(fake: RecordingKube, cleanups: list[str]) -> Result:
    def cleanup(ctx: Context, obj: dict[str, Any]) -> preamble.Cleaned:
        cleanups.append(obj["metadata"]["name"])
        return preamble.Cleaned(Result(wake=("handle/op/h",)), ("Deleted", "gone"))

    ctx = Context(kube=fake, events=fake, mapper=NO_DISCOVERY, settings=SETTINGS)  # type: ignore[arg-type]
    return preamble.ObjectReconciler("ResourceClaim", live=lambda c, o: Result(), deleting=cleanup)(ctx, "n", "c")


def test_cleanup_runs_then_our_finalizers_go_then_the_event() -> None:
    fake, cleanups = RecordingKube(_deleting([SETTINGS.finalizer, "other/keep"])), []
    result = _run(fake, cleanups)
    assert cleanups == ["c"]
    assert fake.calls == [("patch", {"metadata": {"finalizers": ["other/keep"]}}), ("event", "Deleted")]
    assert result.wake == ("handle/op/h",)


def test_no_cleanup_without_one_of_our_finalizers() -> None:
    fake, cleanups = RecordingKube(_deleting(["other/keep"])), []
    assert _run(fake, cleanups) == Result()
    assert cleanups == [] and fake.calls == []


def test_an_object_gone_before_its_finalizer_was_removed_gets_no_event() -> None:
    fake, cleanups = RecordingKube(_deleting([SETTINGS.finalizer]), gone_on_patch=True), []
    result = _run(fake, cleanups)
    assert fake.calls == [("patch", {"metadata": {"finalizers": []}})]
    assert result.wake == ("handle/op/h",)


class ConflictingKube(RecordingKube):
    """Serves a live object whose first finalizer write loses a race (409), as a write against a stale read does."""

    def __init__(self, obj: dict[str, Any]) -> None:
        super().__init__(obj)
        self.reads = 0

    def get_or_none(self, *args: Any) -> dict[str, Any]:
        self.reads += 1
        return {**self.obj, "metadata": {**self.obj["metadata"], "resourceVersion": str(self.reads)}}

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict[str, Any],
                    resource_version: str | None = None) -> dict[str, Any]:
        self.calls.append(("patch", resource_version))
        if resource_version == "1":
            raise kube.Conflict(409, "Conflict", "the object has been modified")
        return {**self.obj, "metadata": {**self.obj["metadata"], "finalizers": patch["metadata"]["finalizers"]}}


def test_a_conflict_reruns_the_kind_from_a_fresh_read() -> None:
    live = {"apiVersion": f"{SETTINGS.domain}/v1", "kind": "ResourcePool",
            "metadata": {"name": "p", "namespace": "op", "resourceVersion": "0"}}
    fake, seen = ConflictingKube(live), []

    def converge(ctx: Context, obj: dict[str, Any]) -> Result:
        seen.append(obj["metadata"]["finalizers"])
        return Result(wake=("pool/op/p",))

    ctx = Context(kube=fake, events=fake, mapper=NO_DISCOVERY, settings=SETTINGS)  # type: ignore[arg-type]
    result = preamble.ObjectReconciler("ResourcePool", live=converge)(ctx, "op", "p")
    assert fake.calls == [("patch", "1"), ("patch", "2")]  # the second write carries the second read's version
    assert seen == [[SETTINGS.finalizer]]  # the kind's step ran once, on the object with the finalizer on
    assert result.wake == ("pool/op/p",)


def test_every_kind_but_the_provider_is_declared_to_the_preamble() -> None:
    """The engine calls the preamble and the preamble the kind: no kind wraps the preamble in a function of its own
    (which would put the kind's module on both sides of the preamble in every run)."""
    from poolboy.reconcilers import RECONCILERS

    declared = {kind: reconciler.kind for kind, reconciler in RECONCILERS.items()
                if isinstance(reconciler, preamble.ObjectReconciler)}
    assert declared == {"claim": "ResourceClaim", "handle": "ResourceHandle", "pool": "ResourcePool",
                        "scaling": "ResourcePoolScaling"}
    assert {kind for kind in RECONCILERS if kind not in declared} == {"provider"}

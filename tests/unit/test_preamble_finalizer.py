"""The preamble's finalizer rule: cleanup only while one of our finalizers is on, then removal, then the Event."""

from __future__ import annotations

from typing import Any

from poolboy import kube
from poolboy.context import Context
from poolboy.reconcilers import preamble
from poolboy.result import Result
from poolboy.settings import Settings

SETTINGS = Settings(operator_namespace="op")


class RecordingKube:
    """Serves one object and records the writes the preamble makes (a pure unit test: no API server needed)."""

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

    def emit_event(self, obj: dict[str, Any], reason: str, message: str, **_: Any) -> None:
        self.calls.append(("event", reason))


def _deleting(finalizers: list[str]) -> dict[str, Any]:
    return {"apiVersion": f"{SETTINGS.domain}/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": "7", "finalizers": finalizers,
                         "deletionTimestamp": "2030-01-01T00:00:00Z"}}


def _run(fake: RecordingKube, cleanups: list[str]) -> Result:
    def cleanup(ctx: Context, obj: dict[str, Any]) -> preamble.Cleaned:
        cleanups.append(obj["metadata"]["name"])
        return preamble.Cleaned(Result(enqueue=("handle/op/h",)), ("Deleted", "gone"))

    ctx = Context(kube=fake, settings=SETTINGS)  # type: ignore[arg-type]
    return preamble.reconcile_object(ctx, "ResourceClaim", "n", "c", live=lambda c, o: Result(), deleting=cleanup)


def test_cleanup_runs_then_our_finalizers_go_then_the_event() -> None:
    fake, cleanups = RecordingKube(_deleting([SETTINGS.finalizer, "other/keep"])), []
    result = _run(fake, cleanups)
    assert cleanups == ["c"]
    assert fake.calls == [("patch", {"metadata": {"finalizers": ["other/keep"]}}), ("event", "Deleted")]
    assert result.enqueue == ("handle/op/h",)


def test_no_cleanup_without_one_of_our_finalizers() -> None:
    fake, cleanups = RecordingKube(_deleting(["other/keep"])), []
    assert _run(fake, cleanups) == Result()
    assert cleanups == [] and fake.calls == []


def test_an_object_gone_before_its_finalizer_was_removed_gets_no_event() -> None:
    fake, cleanups = RecordingKube(_deleting([SETTINGS.finalizer]), gone_on_patch=True), []
    result = _run(fake, cleanups)
    assert fake.calls == [("patch", {"metadata": {"finalizers": []}})]
    assert result.enqueue == ("handle/op/h",)

"""The claim-path instrument's pure parts: which calls its hook records, and how a way is read from the stacks."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

from benchmarks import claim_path


def _hook_module() -> object:
    spec = importlib.util.spec_from_file_location("claim_path_hook", claim_path.HOOK_DIR / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # inert: POOLBOY_CLAIM_PATH_OUT is not set in the tests
    return module


def test_the_hook_records_only_calls_for_a_claim() -> None:
    hook = _hook_module()
    for_a_claim = hook._for_a_claim  # type: ignore[attr-defined]
    assert for_a_claim("submit", {"item": ("ADDED", {"kind": "ResourceClaim"}, [])})
    assert not for_a_claim("submit", {"item": ("ADDED", {"kind": "ResourceHandle"}, [])})
    assert for_a_claim("publish_many", {"publishes": [SimpleNamespace(key="pool/op/p"),
                                                      SimpleNamespace(key="claim/ns/c")]})
    assert not for_a_claim("publish_many", {"publishes": [SimpleNamespace(key="handle/op/h")]})
    bind = [{"op": "test", "path": "/metadata/resourceVersion", "value": "3"},
            {"op": "add", "path": "/spec/resourceClaim", "value": {}}]
    assert for_a_claim("patch_json", {"kind": "ResourceHandle", "ops": bind})
    assert not for_a_claim("patch_json", {"kind": "ResourceHandle", "ops": bind[:1]})
    assert not for_a_claim("patch_json", {"kind": "ResourceClaim", "ops": bind})


def test_the_way_is_the_shortest_stack_of_the_right_process_each_file_once() -> None:
    worker = [["workers/tasks.py", "execute"], ["poolboy/reconcilers/preamble.py", "ObjectReconciler.__call__"],
              ["poolboy/reconcilers/claim/__init__.py", "_live"], ["poolboy/reconcilers/claim/__init__.py", "process"]]
    longer = [["workers/tasks.py", "execute"], ["workers/tasks.py", "retry"], *worker[1:]]
    watcher = [["watcher/delivery.py", "DeliveryQueue._run"], ["engine/enqueue.py", "Enqueuer.publish_many"]]
    stacks = [{"point": "patch_json", "stack": longer}, {"point": "patch_json", "stack": worker},
              {"point": "publish_many", "stack": worker[:1]}, {"point": "publish_many", "stack": watcher}]
    assert claim_path.shortest(stacks, "patch_json", "workers/") == worker
    assert claim_path.shortest(stacks, "publish_many", "watcher/") == watcher  # not the worker's shorter one
    assert claim_path.shortest(stacks, "submit", "watcher/") == []
    assert claim_path.modules(worker) == ["workers/tasks.py", "poolboy/reconcilers/preamble.py",
                                          "poolboy/reconcilers/claim/__init__.py"]
    assert Path(claim_path.HOOK_DIR, "sitecustomize.py").is_file()


def test_a_module_left_and_entered_again_is_a_back_and_forth() -> None:
    stack = [["workers/tasks.py", "execute"], ["poolboy/reconcilers/claim/__init__.py", "reconcile"],
             ["poolboy/reconcilers/preamble.py", "reconcile_object"], ["poolboy/kube/errors.py", "retry"],
             ["poolboy/reconcilers/preamble.py", "once"], ["poolboy/reconcilers/claim/__init__.py", "_live"],
             ["poolboy/reconcilers/claim/__init__.py", "process"]]
    assert claim_path.reentered(stack) == ["poolboy/reconcilers/preamble.py", "poolboy/reconcilers/claim/__init__.py"]
    assert claim_path.reentered([stack[0], *stack[4:]]) == []  # several frames in a row in one file are one visit

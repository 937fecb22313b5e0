"""A claim's way through the running stack goes down the layers once (issue 19): recorded as the code runs by
``benchmarks/claim_path.py`` (a small W1 with a profile hook in every process), no module is left and entered again
on the way from the watcher's event to the task message, nor from the task to the handle's bind patch, and the
whole way crosses no more modules than it did when last measured."""

from __future__ import annotations

import pytest

from benchmarks import claim_path

pytestmark = pytest.mark.slow


def test_a_claims_way_from_watch_event_to_bind_patch_enters_no_module_twice() -> None:
    way = claim_path.way(claim_path.record(n=2, workers=1))
    for label, stack in way.items():
        assert stack, f"nothing recorded at {label!r}: the point's function or file moved ({claim_path.POINTS})"
        assert not claim_path.reentered(stack), f"{label}: back-and-forth through {claim_path.reentered(stack)}"
    crossed = {path for stack in way.values() for path in claim_path.modules(stack)}
    assert len(crossed) <= claim_path.MAX_MODULES, sorted(crossed)
    worker = claim_path.modules(way["worker: bind patch"])
    assert worker[0] == "workers/tasks.py" and worker[1] == "poolboy/reconcilers/preamble.py", worker
    assert "poolboy/kube/client.py" in worker, worker

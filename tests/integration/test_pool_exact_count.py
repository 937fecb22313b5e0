"""A pool never makes more handles than it needs, whatever failed between its creates (docs/behaviour.md#pools).

The run reads through a view that lags the API server, as the shared read cache does before the watch delivers an
earlier run's creates (:class:`LaggingView`); the API server is devcluster, whose ``after_commit`` faults store a
create and answer it with an error (an answer lost after the commit). The control cases run the same scenario with
the lagging view as the run's API reader too, and show it over-provisions: so each scenario can fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devcluster.testing import DevCluster
from poolboy.kube import KubeClient, ServerError
from poolboy.reconcilers import pool
from tests.converge import api_context
from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv
from tests.integration.support import PausedCall, open_env, run_beside

henv = support.henv  # the fixture

#: the view's stand-in for an object: an earlier version of it, or None (the watch has not delivered it yet)
Earlier = dict[tuple[str, str], "dict[str, Any] | None"]


class LaggingView:
    """The API as a cache that lags shows it: each listed object named in ``earlier`` (by kind and name) is that
    earlier version of it, or left out; everything else, and every write, is the API server's."""

    def __init__(self, kube: KubeClient, earlier: Earlier) -> None:
        self.kube, self.earlier = kube, earlier

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: Any) -> list[dict]:
        items = [self.earlier.get((kind, o["metadata"]["name"]), o) for o in
                 self.kube.list(api_version, kind, namespace, **selectors)]
        return [o for o in items if o is not None]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kube, name)


class CountedReader:
    """The API server's reader, counting the lists the run asks it for."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube, self.lists = kube, 0

    def list(self, *args: Any, **kwargs: Any) -> list[dict]:
        self.lists += 1
        return self.kube.list(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kube, name)


@pytest.fixture()
def faulty(fresh_devcluster: DevCluster) -> Iterator[tuple[HandleEnv, DevCluster]]:
    for env in open_env(fresh_devcluster, HandleEnv, prefix="hx"):
        yield env, fresh_devcluster


def _pool(env: HandleEnv, min_available: int) -> None:
    env.configmap_provider("cm")
    env.pool("pool", minAvailable=min_available, provider={"name": "cm"})


def _unseen(names: list[str]) -> Earlier:
    return {("ResourceHandle", name): None for name in names}


def _run(env: HandleEnv, view: Any, api: Any) -> None:
    """One pool run reading through ``view``, with ``api`` as its API server reader."""
    pool.reconcile(api_context(env.kube, env.settings, kube=view, api=api), env.op, "pool")


def _names(env: HandleEnv, **labels: str) -> list[str]:
    return [h["metadata"]["name"] for h in env.handles(**labels) if not h["metadata"].get("deletionTimestamp")]


def _commit_then_fail_one_create(env: HandleEnv, cluster: DevCluster) -> list[str]:
    """A pool run whose first create is stored and answered with a 500: the handles it made."""
    cluster.set_faults(error_rate=1.0, codes=[500], verbs=["create"], kinds=["resourcehandles"], after_commit=True)
    try:
        with pytest.raises(ServerError):
            env.reconcile("pool", "pool")
    finally:
        cluster.clear_faults()
    return [h["metadata"]["name"] for h in env.pool_handles("pool")]


def test_a_create_whose_answer_was_lost_is_counted_before_creating_more(faulty) -> None:
    env, cluster = faulty
    _pool(env, 3)
    stored = _commit_then_fail_one_create(env, cluster)
    assert len(stored) == 1, "the faulted create was stored"
    _run(env, LaggingView(env.kube, _unseen(stored)), env.kube)
    assert len(env.pool_handles("pool")) == 3, "exactly minAvailable"


def test_control_counting_from_the_lagging_view_makes_one_too_many(faulty) -> None:
    """Control: the faulted run's names taken out of the pool's status, and the count taken from the lagging view."""
    env, cluster = faulty
    _pool(env, 3)
    view = LaggingView(env.kube, _unseen(_commit_then_fail_one_create(env, cluster)))
    pool_obj = env.get("ResourcePool", "pool")
    env.kube.replace_status({**pool_obj, "status": {}})
    _run(env, view, view)
    assert len(env.pool_handles("pool")) == 4


def test_handles_the_view_has_not_seen_yet_are_counted(henv: HandleEnv) -> None:
    _pool(henv, 3)
    henv.reconcile("pool", "pool")
    view = LaggingView(henv.kube, _unseen([h["metadata"]["name"] for h in henv.pool_handles("pool")][:2]))
    _run(henv, view, henv.kube)
    assert len(henv.pool_handles("pool")) == 3
    _run(henv, view, view)
    assert len(henv.pool_handles("pool")) == 5, "control: the view alone counts 1 of 3"


def test_a_run_with_nothing_to_create_asks_the_api_server_nothing(henv: HandleEnv) -> None:
    _pool(henv, 2)
    henv.reconcile("pool", "pool")
    full = CountedReader(henv.kube)
    _run(henv, henv.kube, full)
    assert full.lists == 0
    first = henv.pool_handles("pool")[0]["metadata"]["name"]
    lagging = CountedReader(henv.kube)
    _run(henv, LaggingView(henv.kube, _unseen([first])), lagging)
    assert lagging.lists == 1, "a deficit in the view: one list of the pool's handles from the API server"
    assert len(henv.pool_handles("pool")) == 2


def test_a_scaling_counts_its_handles_and_records_from_the_api_server(henv: HandleEnv) -> None:
    """The scaling's status recorded a handle since deleted (claimed, then released); the view has neither the
    record nor the handle's deletion's consequences, so it sees one missing."""
    _pool(henv, 0)
    henv.scaling("s", "pool", 2)
    henv.reconcile("pool", "pool")
    label = {f"{henv.d}/resource-pool-scaling-name": "s"}
    made = _names(henv, **label)
    assert len(made) == 2
    unrecorded = henv.get("ResourcePoolScaling", "s")
    henv.reconcile("scaling", "s")
    assert sorted(henv.get("ResourcePoolScaling", "s")["status"]["handles"]) == sorted(made)
    henv.kube.patch_merge(henv.api, "ResourceHandle", made[0], henv.op, {"metadata": {"finalizers": []}})
    henv.kube.delete(henv.api, "ResourceHandle", made[0], henv.op)
    view = LaggingView(henv.kube, {("ResourcePoolScaling", "s"): unrecorded})
    _run(henv, view, henv.kube)
    assert _names(henv, **label) == made[1:], "the scaling is done: nothing more is made"
    _run(henv, view, view)
    assert len(_names(henv, **label)) == 2, "control: the view alone counts one missing"


def test_two_runs_of_one_pool_at_once_fill_its_deficit_once(henv: HandleEnv) -> None:
    """One run of the pool has counted its deficit and is about to create when a second run of the same pool starts
    (a Redis loss ended the first run's lease) and goes from start to end; then the first goes on. The pool has
    exactly minAvailable handles: the first run named its creates in the pool's status before making them."""
    _pool(henv, 3)
    paused = PausedCall(henv.kube, "create")
    run_beside(lambda: _run(henv, paused, paused), paused, lambda: henv.reconcile("pool", "pool"))
    henv.reconcile("pool", "pool")
    assert len(henv.pool_handles("pool")) == 3
    status = henv.get("ResourcePool", "pool")["status"]
    assert status["resourceHandleCount"]["available"] == 3 and not status.get("pendingHandles")


def test_creates_a_run_named_and_did_not_make_are_made_by_the_next_with_their_names(henv: HandleEnv) -> None:
    """A run named two creates in the pool's status and died before making them: the next run makes exactly those."""
    _pool(henv, 2)
    pool_obj = henv.get("ResourcePool", "pool")
    named = [{"name": "guid-aaaaa"}, {"name": "guid-bbbbb"}]
    henv.kube.replace_status({**pool_obj, "status": {"pendingHandles": named}})
    henv.reconcile("pool", "pool")
    assert sorted(h["metadata"]["name"] for h in henv.pool_handles("pool")) == ["guid-aaaaa", "guid-bbbbb"]
    assert not henv.get("ResourcePool", "pool")["status"].get("pendingHandles")


"""Hard cases (docs/behaviour.md#hard-cases) that had no test of their own, written as a user would meet them."""

from __future__ import annotations

import threading

from tests.integration.claim_support import ClaimEnv, env_fixture  # noqa: F401 - env_fixture provides "env"


def _claim(env: ClaimEnv, name: str = "c") -> None:
    env.claim(name, {"resources": [{"name": "r", "provider": {"name": "p"}, "template": {"data": {"a": "1"}}}]})


def _strip_finalizers(env: ClaimEnv, kind: str, name: str, namespace: str) -> None:
    env.kube.patch_merge(env.api, kind, name, namespace, {"metadata": {"finalizers": None}})


# --- "A recreated claim with the same name gets a new handle" ------------------------------------------------------


def test_claim_recreated_while_its_old_handle_is_deleting_gets_a_new_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _claim(env)
    env.converge("c")
    old = env.claim_handle("c")["metadata"]["name"]
    # keep the old handle "deleting" (another controller's finalizer), then delete and recreate the claim
    env.kube.patch_merge(env.api, "ResourceHandle", old, env.op,
                         {"metadata": {"finalizers": [env.d, "example.com/hold"]}})
    env.kube.delete(env.api, "ResourceClaim", "c", env.ns)
    env.reconcile_claim("c")  # the finalizer run: deletes the handle (now deleting) and lets the claim go
    assert env.get_claim("c") is None and env.get_handle(old)["metadata"].get("deletionTimestamp")
    _claim(env)
    env.converge("c")
    new = env.claim_handle("c")["metadata"]["name"]
    assert new != old
    env.kube.patch_merge(env.api, "ResourceHandle", old, env.op, {"metadata": {"finalizers": [env.d]}})
    env.converge_key(env.key_of("handle", old))
    assert env.get_handle(old) is None and env.get_claim("c") is not None and env.get_handle(new) is not None


def test_claim_recreated_after_its_predecessor_vanished_without_cleanup_gets_a_new_handle(env: ClaimEnv) -> None:
    """The old claim went away without Poolboy's cleanup (its finalizers were removed by hand), and a claim of the
    same name was created before the old handle noticed: the new claim must not inherit the old handle, and the
    old handle's removal must not take the new claim with it."""
    env.configmap_provider("p")
    _claim(env)
    env.converge("c")
    old = env.claim_handle("c")["metadata"]["name"]
    _strip_finalizers(env, "ResourceClaim", "c", env.ns)
    env.kube.delete(env.api, "ResourceClaim", "c", env.ns)
    assert env.get_claim("c") is None
    _claim(env)
    env.converge("c")
    new = env.claim_handle("c")["metadata"]["name"]
    assert new != old
    env.converge_key(env.key_of("handle", old))
    assert env.get_handle(old) is None
    assert env.get_claim("c") is not None and env.claim_handle("c")["metadata"]["name"] == new


def test_deleting_bound_handle_is_never_reused_and_the_claim_is_not_rebound(env: ClaimEnv) -> None:
    """"Deleting handles are never bound or reused, and a remembered 'bound handle' is re-read before it is reused":
    the claim's recorded handle is deleting, so the claim shows Bound=False/HandleDeleted and gets no other handle."""
    env.configmap_provider("p")
    _claim(env)
    env.converge("c")
    old = env.claim_handle("c")["metadata"]["name"]
    env.kube.patch_merge(env.api, "ResourceHandle", old, env.op,
                         {"metadata": {"finalizers": [env.d, "example.com/hold"]}})
    env.kube.delete(env.api, "ResourceHandle", old, env.op)
    env.reconcile_claim("c")
    claim = env.get_claim("c")
    assert claim["status"]["resourceHandle"]["name"] == old
    assert env.condition("c", "Bound")["reason"] == "HandleDeleted"
    assert [h["metadata"]["name"] for h in env.handles()] == [old]


# --- "Initialising handle.status.resources concurrently with other status writers must not clobber either side" ----


def test_status_written_by_someone_else_during_the_handle_run_survives(env: ClaimEnv) -> None:
    """Another writer (an upstream tool, a migration) adds a status key while the handle initialises its
    ``status.resources``: the handle's write is conditional, so it retries from a fresh read and keeps both."""
    env.configmap_provider("p")
    env.handle("guid-solo", {"resources": [{"provider": env.provider_ref("p"), "template": {}}]})
    kube = env.kube
    original = kube.replace_status
    injected = threading.Event()

    def racing_replace_status(body: dict) -> dict:
        if not injected.is_set() and body.get("kind") == "ResourceHandle":
            injected.set()
            kube.patch_merge(env.api, "ResourceHandle", "guid-solo", env.op, {"status": {"external": "kept"}},
                             status=True)
        return original(body)

    kube.replace_status = racing_replace_status  # type: ignore[method-assign]
    try:
        env.converge_key(env.key_of("handle", "guid-solo"))
    finally:
        kube.replace_status = original  # type: ignore[method-assign]
    status = env.get_handle("guid-solo")["status"]
    assert injected.is_set()
    assert status["external"] == "kept"
    assert status["resources"][0]["reference"]["kind"] == "ConfigMap"
    assert env.kube.get_or_none("v1", "ConfigMap", status["resources"][0]["reference"]["name"], env.ns)


# --- "One bad watch event never stops the watch" ---------------------------------------------------------------------


def test_one_event_that_breaks_the_handler_does_not_stop_the_watch(env: ClaimEnv) -> None:
    """The watcher's callback fails on one object (listed and later modified); objects created after it still arrive,
    and so does the poison object's own later change."""
    from tests.waiting import wait_for
    from watcher.informer import Informer

    seen: list[tuple[str, str]] = []

    def callback(event_type: str, obj: dict) -> None:
        name = obj["metadata"]["name"]
        seen.append((event_type, name))
        if name == "poison":
            raise ValueError("cannot handle this object")

    env.kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "poison", "namespace": env.ns}})
    informer = Informer(env.kube, "v1", "ConfigMap", callback, namespace=env.ns, watch_timeout=5).start()
    try:
        wait_for(lambda: ("LISTED", "poison") in seen, timeout=10, message="the listed poison object")
        env.kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after", "namespace": env.ns}})
        env.kube.patch_merge("v1", "ConfigMap", "poison", env.ns, {"data": {"x": "1"}})
        env.kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "last", "namespace": env.ns}})
        wait_for(lambda: {("ADDED", "after"), ("MODIFIED", "poison"), ("ADDED", "last")} <= set(seen), timeout=10,
                 message="events after the failing ones")
    finally:
        informer.stop()
        informer.join(5)


# --- "the finalizer is removed only after cleanup succeeds, so resources never leak without an owner" -----------------


def test_handle_finalizer_stays_until_its_resources_are_really_deleted(env: ClaimEnv) -> None:
    from poolboy import kube as kube_errors

    env.configmap_provider("p")
    _claim(env)
    env.converge("c")
    handle = env.claim_handle("c")
    name = handle["metadata"]["name"]
    configmap = handle["status"]["resources"][0]["reference"]["name"]
    original = env.kube.delete

    def failing_delete(api_version: str, kind: str, *args, **kwargs):
        if kind == "ConfigMap":
            raise kube_errors.ApiError(503, "ServiceUnavailable", "injected")
        return original(api_version, kind, *args, **kwargs)

    env.kube.delete(env.api, "ResourceHandle", name, env.op)
    env.kube.delete = failing_delete  # type: ignore[method-assign]
    try:
        outcome = env.reconcile_once("handle", name)
    except kube_errors.ApiError as error:
        outcome = error
    finally:
        env.kube.delete = original  # type: ignore[method-assign]
    assert isinstance(outcome, kube_errors.ApiError), outcome
    assert env.get_handle(name)["metadata"]["finalizers"] == [env.d], "finalizer kept while cleanup failed"
    assert env.kube.get_or_none("v1", "ConfigMap", configmap, env.ns) is not None
    env.converge_key(env.key_of("handle", name))  # the retry succeeds
    assert env.get_handle(name) is None and env.kube.get_or_none("v1", "ConfigMap", configmap, env.ns) is None


# --- "Many resources of one claim changing at once must not lose or fail claim status updates" -----------------------


def test_many_resources_changing_at_once_all_reach_the_claim_status(env: ClaimEnv) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from poolboy.context import utcnow
    from poolboy.reconcilers import claim as claim_reconciler
    from tests.converge import api_context

    env.configmap_provider("p", updateFilters=[{"pathMatch": "/data/.*"}])
    env.claim("c", {"resources": [{"name": f"r{i}", "provider": {"name": "p"}, "template": {"data": {"v": "0"}}}
                                  for i in range(4)]})
    env.converge("c")
    refs = [r["reference"]["name"] for r in env.claim_handle("c")["status"]["resources"]]
    assert len(refs) == 4

    def change(index: int) -> None:
        for value in range(1, 6):
            env.kube.patch_merge("v1", "ConfigMap", refs[index], env.ns, {"data": {"v": str(value)}})

    def reconcile() -> None:  # several workers' worth of claim runs, racing each other and the writes
        for _ in range(6):
            claim_reconciler.reconcile(api_context(env.kube, env.settings, now=utcnow()), env.ns, "c")

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(change, i) for i in range(4)] + [pool.submit(reconcile) for _ in range(3)]
        for future in futures:
            future.result()  # no reconcile failed
    env.reconcile_claim("c")  # the run the last resource event triggers
    states = [r["state"]["data"]["v"] for r in env.get_claim("c")["status"]["resources"]]
    assert states == ["5", "5", "5", "5"]

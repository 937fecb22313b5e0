"""Spec §5 hard cases that had no test of their own, written as a user would meet them."""

from __future__ import annotations

import threading

from tests.integration.test_claim_support import ClaimEnv, env_fixture  # noqa: F401 - env_fixture provides "env"


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

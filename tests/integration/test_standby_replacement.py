"""A claim whose handle does not resume from standby in time is served by another handle (docs/behaviour.md#standby,
"Resume timeout"), and a run that stops between the bind of the replacement and the claim's record of it is
completed by the next: one handle serves the claim, the stuck one goes, the claim stays."""

from __future__ import annotations

from datetime import timedelta

from poolboy import kube
from poolboy.context import utcnow
from tests.integration.claim_support import ClaimEnv, env_fixture, ts  # noqa: F401 - env_fixture provides "env"


def _pool_handle(env: ClaimEnv, name: str) -> dict:
    spec = {"resources": [{"provider": env.provider_ref("p"), "template": {}}],
            "resourcePool": {"apiVersion": env.api, "kind": "ResourcePool", "name": "vms", "namespace": env.op}}
    return env.handle(name, spec, labels={f"{env.d}/resource-pool-name": "vms",
                                          f"{env.d}/resource-pool-namespace": env.op})


def _resuming_since(env: ClaimEnv, name: str, seconds_ago: int, timeout: int) -> None:
    since = utcnow() - timedelta(seconds=seconds_ago)
    env.kube.patch_merge(env.api, "ResourceHandle", name, env.op, {"status": {
        "state": "Resuming", "resuming": {"since": ts(since), "deadline": ts(since + timedelta(seconds=timeout))}}},
        status=True)


def test_a_claim_shows_resuming_then_gets_another_handle_past_the_deadline_even_across_a_crash(env: ClaimEnv) -> None:
    # the resource never passes its readiness check, so the handle never finishes resuming by itself
    env.configmap_provider("p", readinessCheck="data is defined and data.resumed is defined")
    _pool_handle(env, "guid-stuck")
    env.claim("c", {"resources": [{"name": "r", "provider": {"name": "p"}, "template": {}}]})
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] == "guid-stuck"

    _resuming_since(env, "guid-stuck", seconds_ago=1, timeout=600)
    env.reconcile_claim("c")
    ready = env.condition("c", "Ready") or {}
    assert (ready.get("status"), ready.get("reason")) == ("False", "Resuming")
    assert "guid-stuck is resuming from standby" in ready["message"] and "timeout 10m" in ready["message"]
    assert env.claim_handle("c")["metadata"]["name"] == "guid-stuck"  # not yet past its deadline

    _pool_handle(env, "guid-spare")
    _resuming_since(env, "guid-stuck", seconds_ago=20, timeout=10)
    original = env.kube.replace_status

    def lost_claim_status(body: dict) -> dict:
        if body.get("kind") == "ResourceClaim":
            raise kube.ApiError(503, "ServiceUnavailable", "injected: the run stops before the claim records")
        return original(body)

    env.kube.replace_status = lost_claim_status  # type: ignore[method-assign]
    try:
        env.reconcile_claim("c")
        stopped = False
    except kube.ApiError:
        stopped = True
    finally:
        env.kube.replace_status = original  # type: ignore[method-assign]
    assert stopped
    claim = env.get_claim("c")
    assert claim["status"]["resourceHandle"]["name"] == "guid-stuck"  # the record was lost ...
    assert env.get_handle("guid-spare")["spec"]["resourceClaim"]["name"] == "c"  # ... after the bind
    assert env.get_handle("guid-stuck") is not None

    env.converge("c")  # the next run completes it with the same replacement
    claim = env.get_claim("c")
    assert claim["status"]["resourceHandle"]["name"] == "guid-spare"
    assert not claim["metadata"].get("deletionTimestamp")
    assert env.get_handle("guid-stuck") is None
    assert [h["metadata"]["name"] for h in env.handles(**{f"{env.d}/resource-claim-name": "c"})] == ["guid-spare"]
    assert any(e["reason"] == "ResumeTimeout" and "guid-spare" in e["message"] for e in env.events("c"))
    assert any(e["reason"] == "ResumeTimeout" for e in env.events_in(env.op, "guid-stuck"))

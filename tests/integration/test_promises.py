"""A run about to write what another key reads promises to wake that key (``Context.will_wake``), so the write's
watch event does not run the key while the run is still writing (docs/behaviour.md#work-queue).

The domain reconcilers run against devcluster through :class:`tests.converge.Converger`, which records each promise
with the key whose run made it: a claim promises the handle it creates or binds, a handle the claim whose resource
it creates or updates, each before the write, and a run that writes nothing promises nothing.
"""

from __future__ import annotations

from poolboy import keys
from tests.integration.claim_support import ClaimEnv, env_fixture  # noqa: F401 - env_fixture provides "env"

RESOURCES = {"resources": [{"name": "r", "provider": {"name": "p"}, "template": {"data": {"a": "1"}}}]}


def test_a_claim_promises_the_handle_it_creates_and_the_handle_the_claim_whose_resource_it_creates(
        env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", RESOURCES)
    env.converge("c")
    handle = env.key_of(keys.HANDLE, env.claim_handle("c")["metadata"]["name"])
    claim = env.key("c")
    assert (claim, handle) in env.converger.promises
    assert (handle, claim) in env.converger.promises


def test_a_bound_pool_handle_promises_its_claim_before_it_updates_the_resource(env: ClaimEnv) -> None:
    """The pool handle's resource exists before the bind; the bind's run annotates it with the claim (an update,
    whose MODIFIED event reaches the claim)."""
    env.configmap_provider("p")
    env.handle("guid-pool1", {"resources": [{"provider": env.provider_ref("p"), "template": {}}]},
               labels={f"{env.d}/resource-pool-name": "pool1", f"{env.d}/resource-pool-namespace": env.op})
    handle = env.key_of(keys.HANDLE, "guid-pool1")
    env.converge_key(handle)
    assert env.get_handle("guid-pool1")["status"]["resources"][0]["reference"], "control: the resource exists"
    assert not env.converger.promises, "control: an unbound handle has no claim to promise"

    env.claim("c", RESOURCES)
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] == "guid-pool1"
    claim = env.key("c")
    assert env.converger.promises == [(claim, handle), (handle, claim)]


def test_converged_runs_promise_nothing(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    env.claim("c", RESOURCES)
    env.converge("c")
    handle = env.key_of(keys.HANDLE, env.claim_handle("c")["metadata"]["name"])
    before = list(env.converger.promises)
    env.converge("c")
    env.converge_key(handle)
    assert env.converger.promises == before

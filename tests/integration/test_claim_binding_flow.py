"""Binding (docs/behaviour.md#binding), handle creation (docs/behaviour.md#handle-creation), claim → handle propagation
(docs/behaviour.md#propagation), and the docs/behaviour.md#hard-cases bind races."""

from __future__ import annotations

import re
from datetime import timedelta

from poolboy import keys
from poolboy.domain import binding
from poolboy.domain.handle_factory import handle_name
from poolboy.reconcilers.claim.bind import try_bind
from tests.converge import api_context
from tests.integration.claim_support import ClaimEnv, env_fixture, parse_ts, ts  # noqa: F401 - env_fixture provides "env"
from tests.integration.support import PausedCall, run_beside


def _pool_handle(env: ClaimEnv, name: str, *, template: dict | None = None, pool: str = "pool1",
                 lifespan: dict | None = None, provider: str = "p") -> dict:
    spec: dict = {"resources": [{"provider": env.provider_ref(provider), "template": template or {}}],
                  "resourcePool": {"apiVersion": env.api, "kind": "ResourcePool", "name": pool, "namespace": env.op}}
    if lifespan:
        spec["lifespan"] = lifespan
    return env.handle(name, spec, labels={f"{env.d}/resource-pool-name": pool,
                                          f"{env.d}/resource-pool-namespace": env.op})


def _resources_claim(env: ClaimEnv, name: str = "c", template: dict | None = None, **spec: object) -> None:
    env.claim(name, {"resources": [{"name": "r", "provider": {"name": "p"}, "template": template or {}}], **spec})


# --- docs/behaviour.md#binding
# ---------------------------------------------------------------------------------------------------------


def test_claim_binds_matching_unbound_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    _resources_claim(env)
    env.converge("c")
    status = env.get_claim("c")["status"]
    assert status["resourceHandle"] == {"apiVersion": env.api, "kind": "ResourceHandle", "name": "guid-pool1",
                                        "namespace": env.op}
    handle = env.get_handle("guid-pool1")
    assert handle["spec"]["resourceClaim"] == {"apiVersion": env.api, "kind": "ResourceClaim", "name": "c",
                                               "namespace": env.ns}
    assert handle["metadata"]["labels"][f"{env.d}/resource-claim-name"] == "c"
    assert handle["metadata"]["labels"][f"{env.d}/resource-claim-namespace"] == env.ns
    assert handle["spec"]["resources"][0]["name"] == "r"
    assert len(env.handles()) == 1
    assert env.condition("c", "Bound")["status"] == "True"
    assert any(e["reason"] == "Bound" for e in env.events("c"))


def test_binding_a_pool_handle_enqueues_the_pool_and_the_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    _resources_claim(env)
    outcome = env.reconcile_claim("c")
    assert f"pool/{env.op}/pool1" in outcome.hold, "the pool runs soon (batched over a burst of binds)"
    assert f"handle/{env.op}/guid-pool1" in outcome.wake


def test_non_matching_handle_is_not_bound(env: ClaimEnv) -> None:
    env.configmap_provider("p", matchIgnore=[])
    _pool_handle(env, "guid-pool1", template={"data": {"size": "s"}})
    _resources_claim(env, template={"data": {"size": "m"}})
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] != "guid-pool1"
    assert "resourceClaim" not in env.get_handle("guid-pool1")["spec"]


def test_claim_pool_annotation_restricts_candidates(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _pool_handle(env, "guid-other", pool="other")
    _pool_handle(env, "guid-mine1", pool="mine")
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {}}]},
              annotations={f"{env.d}/resource-pool-name": "mine"})
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == "guid-mine1"


def test_unhealthy_and_deleting_handles_are_not_candidates(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    sick = _pool_handle(env, "guid-sick1")
    sick["status"] = {"healthy": False}
    env.kube.replace_status(sick)
    _pool_handle(env, "guid-gone1")
    env.kube.delete(env.api, "ResourceHandle", "guid-gone1", env.op)
    _resources_claim(env)
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] not in ("guid-sick1", "guid-gone1")


def test_ignored_unbound_handle_is_not_a_candidate(env: ClaimEnv) -> None:
    """Binding writes to the handle, and Poolboy writes nothing to an ignored object
    (docs/behaviour.md#triggers-and-finalizers)."""
    env.configmap_provider("p")
    ignored = _pool_handle(env, "guid-aaaa1")
    ignored["metadata"]["labels"][f"{env.d}/ignore"] = ""
    version = env.kube.replace(ignored)["metadata"]["resourceVersion"]
    _resources_claim(env)
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] != "guid-aaaa1"
    assert env.get_handle("guid-aaaa1")["metadata"]["resourceVersion"] == version


def test_claim_bound_to_an_ignored_handle_writes_nothing_to_it_until_it_is_resumed(env: ClaimEnv) -> None:
    """An ignored bound handle gets no propagation, and autoDelete waits until it is resumed
    (docs/behaviour.md#triggers-and-finalizers, #auto-delete-and-auto-detach)."""
    env.configmap_provider("p", parameters=[{"name": "size", "allowUpdate": True, "default": {"value": "s"}}],
                           template={"definition": {"data": {"size": "{{ size }}"}}})
    env.claim("c", {"provider": {"name": "p"}, "autoDelete": {"when": "spec.provider.parameterValues.size == 'l'"}})
    env.converge("c")
    name = env.get_claim("c")["status"]["resourceHandle"]["name"]
    handle = env.get_handle(name)
    handle["metadata"]["labels"][f"{env.d}/ignore"] = "true"
    version = env.kube.replace(handle)["metadata"]["resourceVersion"]

    claim = env.get_claim("c")
    claim["spec"]["provider"]["parameterValues"] = {"size": "m"}
    env.kube.replace(claim)
    env.converge("c")
    assert env.get_handle(name)["metadata"]["resourceVersion"] == version
    claim = env.get_claim("c")
    assert claim["status"]["provider"]["parameterValues"] == {"size": "m"}  # accepted, waiting for the handle
    claim["spec"]["provider"]["parameterValues"] = {"size": "l"}
    env.kube.replace(claim)
    env.converge("c")
    assert env.get_claim("c") is not None  # autoDelete is not evaluated against an ignored handle

    handle = env.get_handle(name)
    del handle["metadata"]["labels"][f"{env.d}/ignore"]
    env.kube.replace(handle)
    env.converge("c")
    assert env.get_claim("c") is None or env.get_claim("c")["metadata"].get("deletionTimestamp")


def test_bind_sets_end_from_handle_default(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1", lifespan={"default": "2h", "end": "2099-01-01T00:00:00Z"})
    _resources_claim(env)
    now = env.converger.clock()
    env.converge("c", now=now)
    handle = env.get_handle("guid-pool1")
    assert parse_ts(handle["spec"]["lifespan"]["end"]) == now + timedelta(hours=2)
    lifespan = env.get_claim("c")["status"]["lifespan"]
    assert lifespan["start"] == ts(now)
    assert lifespan["end"] == ts(now + timedelta(hours=2))


def test_provider_mode_claim_binds_provider_pool_handle_with_effective_values(env: ClaimEnv) -> None:
    env.configmap_provider("p", parameters=[{"name": "size", "default": {"value": "s"}}],
                           template={"definition": {"data": {"size": "{{ size }}"}}})
    env.handle("guid-pool1", {"provider": {"name": "p", "parameterValues": {"size": "s"}}},
               labels={f"{env.d}/resource-pool-name": "pool1"})
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == "guid-pool1"
    assert env.get_handle("guid-pool1")["spec"]["provider"] == {"name": "p", "parameterValues": {"size": "s"}}


def test_resources_claim_binding_provider_pool_handle_removes_spec_provider(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    handle = _pool_handle(env, "guid-pool1")
    handle["spec"]["provider"] = {"name": "p"}
    env.kube.replace(handle)
    _resources_claim(env)
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == "guid-pool1"
    assert "provider" not in env.get_handle("guid-pool1")["spec"]


def test_claim_binds_handle_with_fewer_resources_and_appends_missing(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    env.claim("c", {"resources": [{"name": "a", "provider": {"name": "p"}, "template": {}},
                                  {"name": "b", "provider": {"name": "p"}, "template": {"data": {"x": "1"}}}]})
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == "guid-pool1"
    resources = env.get_handle("guid-pool1")["spec"]["resources"]
    assert [r.get("name") for r in resources] == ["a", "b"]
    assert resources[1]["provider"] == env.provider_ref("p")


def test_disable_creation_stays_unbound_then_binds_when_a_handle_appears(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _resources_claim(env, disableCreation=True)
    log = env.converge("c")
    assert env.handles() == []
    assert env.condition("c", "Bound")["reason"] == "NoMatchingHandle"
    assert env.claim_outcome(log, "c").requeue_at is not None
    _pool_handle(env, "guid-late1")
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == "guid-late1"


def test_waiting_claim_is_enqueued_by_a_new_unbound_handle_and_unlabelled_once_bound(env: ClaimEnv) -> None:
    """The claim must not wait for its periodic re-check: the new handle's reconcile enqueues it
    (docs/behaviour.md#binding)."""
    env.configmap_provider("p")
    _resources_claim(env, disableCreation=True)
    env.converge("c")
    waiting = f"{env.d}/{binding.WAITING_LABEL}"
    assert waiting in env.get_claim("c")["metadata"]["labels"]
    _pool_handle(env, "guid-late1")
    outcome = env.reconcile_once(keys.HANDLE, "guid-late1")
    assert env.key("c") in outcome.wake
    env.converge("c")
    claim = env.get_claim("c")
    assert claim["status"]["resourceHandle"]["name"] == "guid-late1"
    assert waiting not in (claim["metadata"].get("labels") or {})
    bound_outcome = env.reconcile_once(keys.HANDLE, "guid-late1")
    assert [k for k in bound_outcome.wake if k.startswith("claim/")] in ([], [env.key("c")]), \
        "once bound, a handle run enqueues at most its own claim (and only when it changed the handle)"


def test_provider_disable_creation_stays_unbound(env: ClaimEnv) -> None:
    env.configmap_provider("p", disableCreation=True)
    _resources_claim(env)
    env.converge("c")
    assert env.handles() == []
    assert "resourceHandle" not in (env.get_claim("c").get("status") or {})


def test_live_handle_already_bound_to_the_claim_is_adopted(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _resources_claim(env)
    env.handle("guid-mine1", {"resourceClaim": {"apiVersion": env.api, "kind": "ResourceClaim", "name": "c",
                                                "namespace": env.ns},
                              "resources": [{"provider": env.provider_ref("p"), "template": {}}]},
               labels={f"{env.d}/resource-claim-name": "c", f"{env.d}/resource-claim-namespace": env.ns})
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == "guid-mine1"
    assert len(env.handles()) == 1


# --- docs/behaviour.md#handle-creation
# ---------------------------------------------------------------------------------------------------------


def test_created_handle_name_finalizer_labels_and_spec(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _resources_claim(env, template={"data": {"a": "1"}})
    env.converge("c")
    claim = env.get_claim("c")
    handle = env.claim_handle("c")
    assert re.fullmatch(r"guid-[a-z0-9]{5}", handle["metadata"]["name"])
    assert handle["metadata"]["name"] == handle_name(claim["metadata"]["uid"])
    assert handle["metadata"]["finalizers"] == [env.d]
    assert handle["metadata"]["labels"][f"{env.d}/resource-claim-name"] == "c"
    assert handle["spec"]["resources"] == [{"provider": env.provider_ref("p"), "name": "r",
                                            "template": {"data": {"a": "1"}}}]
    assert any(e["reason"] == "HandleCreated" for e in env.events("c"))


def test_provider_mode_created_handle_has_provider_and_resource_list(env: ClaimEnv) -> None:
    env.configmap_provider("p", parameters=[{"name": "size", "default": {"value": "m"}}],
                           template={"definition": {"data": {"size": "{{ size }}"}}})
    env.claim("c", {"provider": {"name": "p"}})
    env.converge("c")
    handle = env.claim_handle("c")
    assert handle["spec"]["provider"] == {"name": "p", "parameterValues": {"size": "m"}}
    assert handle["spec"]["resources"][0]["name"] == "p"
    assert handle["spec"]["resources"][0]["template"] == {"data": {"size": "m"}}
    assert env.get_claim("c")["status"]["resources"][0]["name"] == "p"


def test_repeated_create_adopts_the_existing_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p", disableCreation=False)
    _resources_claim(env)
    claim = env.get_claim("c")
    name = handle_name(claim["metadata"]["uid"])
    # A previous run created the handle but died before listing could see it as bound: simulate by creating it.
    env.handle(name, {"resourceClaim": {"apiVersion": env.api, "kind": "ResourceClaim", "name": "c",
                                        "namespace": env.ns},
                      "resources": [{"provider": env.provider_ref("p"), "template": {}}]})
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == name
    assert len(env.handles()) == 1


def test_created_handle_lifespan_end_minus_start_equals_default(env: ClaimEnv) -> None:
    env.configmap_provider("p", lifespan={"default": "3h", "maximum": "1d", "relativeMaximum": "2d"})
    _resources_claim(env)
    now = env.converger.clock()
    env.reconcile_claim("c", now=now)
    handle = env.claim_handle("c")
    lifespan = env.get_claim("c")["status"]["lifespan"]
    assert parse_ts(handle["spec"]["lifespan"]["end"]) - parse_ts(lifespan["start"]) == timedelta(hours=3)
    assert handle["spec"]["lifespan"]["default"] == "3h"
    assert lifespan["maximum"] == "1d" and lifespan["relativeMaximum"] == "2d"


def test_requested_end_is_clamped_at_creation(env: ClaimEnv) -> None:
    env.configmap_provider("p", lifespan={"default": "1h", "maximum": "4h"})
    now = env.converger.clock()
    _resources_claim(env, lifespan={"end": ts(now + timedelta(days=10))})
    env.reconcile_claim("c", now=now)
    end = parse_ts(env.claim_handle("c")["spec"]["lifespan"]["end"])
    assert end <= now + timedelta(hours=4) + timedelta(seconds=5)


def test_provider_mode_relative_maximum_kept_in_its_own_field(env: ClaimEnv) -> None:
    env.configmap_provider("p", lifespan={"maximum": "5d", "relativeMaximum": "2d"},
                           parameters=[], template={"definition": {"data": {}}})
    env.claim("c", {"provider": {"name": "p"}})
    now = env.converger.clock()
    env.reconcile_claim("c", now=now)
    lifespan = env.claim_handle("c")["spec"]["lifespan"]
    assert lifespan["maximum"] == "5d" and lifespan["relativeMaximum"] == "2d"
    assert parse_ts(lifespan["end"]) == now + timedelta(days=2)


# --- docs/behaviour.md#propagation
# --------------------------------------------------------------------------------------------------------


def test_claim_template_change_is_merged_into_the_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _resources_claim(env, template={"data": {"a": "1", "b": "2"}})
    env.converge("c")
    claim = env.get_claim("c")
    resources = claim["spec"]["resources"]
    resources[0]["template"] = {"data": {"a": "changed"}}
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"spec": {"resources": resources}})
    env.converge("c")
    assert env.claim_handle("c")["spec"]["resources"][0]["template"]["data"] == {"a": "changed", "b": "2"}


def test_new_claim_resources_are_appended_to_the_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _resources_claim(env)
    env.converge("c")
    resources = env.get_claim("c")["spec"]["resources"]
    resources.append({"name": "extra", "provider": env.provider_ref("p"), "template": {"data": {"e": "1"}}})
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"spec": {"resources": resources}})
    env.converge("c")
    handle_resources = env.claim_handle("c")["spec"]["resources"]
    assert [r.get("name") for r in handle_resources] == ["r", "extra"]


def test_requested_end_inside_limits_is_applied_exactly(env: ClaimEnv) -> None:
    env.configmap_provider("p", lifespan={"default": "1h", "maximum": "1d"})
    _resources_claim(env)
    now = env.converger.clock()
    env.converge("c", now=now)
    wanted = ts(now + timedelta(hours=5))
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"spec": {"lifespan": {"end": wanted}}})
    env.converge("c", now=now)
    assert env.claim_handle("c")["spec"]["lifespan"]["end"] == wanted
    assert env.get_claim("c")["status"]["lifespan"]["end"] == wanted


def test_requested_end_beyond_maximum_is_clamped(env: ClaimEnv) -> None:
    env.configmap_provider("p", lifespan={"default": "1h", "maximum": "1d"})
    _resources_claim(env)
    now = env.converger.clock()
    env.converge("c", now=now)
    start = parse_ts(env.get_claim("c")["status"]["lifespan"]["start"])
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns,
                         {"spec": {"lifespan": {"end": ts(now + timedelta(days=30))}}})
    env.converge("c", now=now)
    assert parse_ts(env.claim_handle("c")["spec"]["lifespan"]["end"]) == start + timedelta(days=1)


def test_lifespan_end_change_emits_event(env: ClaimEnv) -> None:
    env.configmap_provider("p", lifespan={"default": "1h", "maximum": "1d"})
    _resources_claim(env)
    now = env.converger.clock()
    env.converge("c", now=now)
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns,
                         {"spec": {"lifespan": {"end": ts(now + timedelta(hours=2))}}})
    env.converge("c", now=now)
    events = [e for e in env.events("c") if e["reason"] == "Lifespan end changed"]
    assert events and events[0]["action"] == "LifespanChange" and events[0]["type"] == "Normal"


# --- docs/behaviour.md#hard-cases races
# -----------------------------------------------------------------------------------------------------


def test_candidate_bound_by_someone_else_after_listing_is_skipped(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    stale = _pool_handle(env, "guid-pool1")
    _resources_claim(env)
    ctx = api_context(env.kube, env.settings)
    claim = env.get_claim("c")
    # Another claim wins the race: the handle's resourceVersion moves on after we listed it.
    other = dict(claim, metadata={**claim["metadata"], "name": "other"})
    assert try_bind(ctx, stale, binding.bind_ops(ctx, other, stale, provider_spec=None, claim_resources=[],
                                                         lifespan_end=None)) is not None
    assert try_bind(ctx, stale, binding.bind_ops(ctx, claim, stale, provider_spec=None, claim_resources=[],
                                                         lifespan_end=None)) is None
    assert env.get_handle("guid-pool1")["spec"]["resourceClaim"]["name"] == "other"


def test_candidate_deleted_after_listing_is_skipped(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    stale = _pool_handle(env, "guid-pool1")
    env.kube.patch_merge(env.api, "ResourceHandle", "guid-pool1", env.op, {"metadata": {"finalizers": []}})
    env.kube.delete(env.api, "ResourceHandle", "guid-pool1", env.op)
    _resources_claim(env)
    ctx = api_context(env.kube, env.settings)
    claim = env.get_claim("c")
    assert try_bind(ctx, stale, binding.bind_ops(ctx, claim, stale, provider_spec=None, claim_resources=[],
                                                         lifespan_end=None)) is None


def test_two_claims_never_share_one_handle(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    _resources_claim(env, "a")
    _resources_claim(env, "b")
    env.converge("a")
    env.converge("b")
    names = {env.get_claim(n)["status"]["resourceHandle"]["name"] for n in ("a", "b")}
    assert len(names) == 2


def test_a_bind_whose_answer_was_lost_is_adopted_though_the_cache_lags(env: ClaimEnv, redis_server) -> None:
    """docs/behaviour.md#hard-cases: an earlier run bound a handle, but the API server went away before its answer
    (and the claim's status) came back, and the read cache has not seen the bind yet. The next run asks the API
    server whether a handle is bound to the claim, and adopts it instead of binding a second one."""
    import redis

    from cache.reader import CachedKubeClient
    from cache.store import ObjectCache
    from poolboy.reconcilers import RECONCILERS

    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    _pool_handle(env, "guid-pool2")
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    cache = ObjectCache(client, env.d)
    cache.heartbeat(60)
    for handle in env.handles():  # the cache as it was before the bind: both handles unbound
        cache.put(handle)
    cache.mark_synced(env.api, "ResourceHandle", env.op)
    _resources_claim(env)
    env.converge("c")
    bound = env.get_claim("c")["status"]["resourceHandle"]["name"]
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns, {"status": {"resourceHandle": None}}, status=True)

    ctx = api_context(env.kube, env.settings, kube=CachedKubeClient(env.kube, cache), api=env.kube)
    RECONCILERS[keys.CLAIM](ctx, env.ns, "c")

    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == bound
    claimed = [h["metadata"]["name"] for h in env.handles() if h["spec"].get("resourceClaim")]
    assert claimed == [bound], f"a second handle was bound: {claimed}"
    client.close()


def _claim_naming(env: ClaimEnv, handle: str) -> None:
    """Claim ``c`` as a run that named ``handle`` and went no further left it."""
    env.claim("c", {"resources": [{"name": "r", "provider": {"name": "p"}, "template": {}}]},
              annotations={f"{env.d}/{binding.BINDING_ANNOTATION}": handle})


def _bound_to(env: ClaimEnv, claim: str) -> list[str]:
    return sorted(h["metadata"]["name"] for h in env.handles()
                  if (h["spec"].get("resourceClaim") or {}).get("name") == claim)


def test_two_runs_of_one_claim_at_once_bind_one_handle(env: ClaimEnv) -> None:
    """docs/behaviour.md#hard-cases: one run of the claim has chosen a handle and is about to bind it when a second
    run of the same claim starts (a Redis loss ended the first run's lease). Both finish; the claim has one handle."""
    from poolboy.reconcilers import RECONCILERS

    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    _pool_handle(env, "guid-pool2")
    _resources_claim(env)
    paused = PausedCall(env.kube, "patch_json")
    run_beside(lambda: RECONCILERS[keys.CLAIM](api_context(env.kube, env.settings, kube=paused), env.ns, "c"),
               paused, lambda: env.reconcile_claim("c"))  # the second run, start to end
    env.converge("c")

    recorded = env.get_claim("c")["status"]["resourceHandle"]["name"]
    assert _bound_to(env, "c") == [recorded], "a second handle was bound to the claim"


def test_a_claim_finishes_the_bind_an_earlier_run_named(env: ClaimEnv) -> None:
    """A run named a handle on the claim and died before binding it: the next run binds that handle, though another
    ranks first now, since a run that named it may still be binding it."""
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1", template={"data": {"a": "1"}})
    _pool_handle(env, "guid-pool2")
    _claim_naming(env, "guid-pool1")
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == "guid-pool1"
    assert _bound_to(env, "c") == ["guid-pool1"]


def test_a_claim_whose_named_handle_went_to_another_claim_binds_and_names_another(env: ClaimEnv) -> None:
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    _pool_handle(env, "guid-pool2")
    _resources_claim(env, "other")
    env.converge("other")
    taken = env.get_claim("other")["status"]["resourceHandle"]["name"]
    _claim_naming(env, taken)
    env.converge("c")
    claim = env.get_claim("c")
    free = ({"guid-pool1", "guid-pool2"} - {taken}).pop()
    assert claim["status"]["resourceHandle"]["name"] == free
    assert claim["metadata"]["annotations"][f"{env.d}/{binding.BINDING_ANNOTATION}"] == free


def test_a_claim_that_named_its_own_new_handle_creates_it_rather_than_bind_a_pool_handle(env: ClaimEnv) -> None:
    """A run decided to create the claim's own handle, named it and died: the next run creates it (a run still going on
    may be creating it) and leaves the pool's handle, which appeared meanwhile, for another claim."""
    env.configmap_provider("p")
    _resources_claim(env)
    uid = env.get_claim("c")["metadata"]["uid"]
    own = handle_name(uid)
    env.kube.patch_merge(env.api, "ResourceClaim", "c", env.ns,
                         {"metadata": {"annotations": {f"{env.d}/{binding.BINDING_ANNOTATION}": own}}})
    _pool_handle(env, "guid-pool1")
    env.converge("c")
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == own
    assert not env.get_handle("guid-pool1")["spec"].get("resourceClaim")


def test_a_second_handle_bound_to_a_claim_that_records_another_is_deleted(env: ClaimEnv) -> None:
    """However it came about (a cluster taken over, a fault no one foresaw), a handle bound to a claim whose status
    records another handle is not the claim's: its run deletes it, with an Event, and the claim stays."""
    env.configmap_provider("p")
    _pool_handle(env, "guid-pool1")
    stray = _pool_handle(env, "guid-pool2", template={"data": {"a": "1"}})
    _resources_claim(env)
    env.converge("c")
    kept = env.get_claim("c")["status"]["resourceHandle"]["name"]
    assert kept == "guid-pool1"
    ctx = api_context(env.kube, env.settings)
    claim = env.get_claim("c")
    assert try_bind(ctx, stray, binding.bind_ops(ctx, claim, stray, provider_spec=None, claim_resources=[],
                                                 lifespan_end=None)) is not None
    env.converge_key(env.key_of("handle", "guid-pool2"))
    assert env.get_handle("guid-pool2") is None
    assert env.get_claim("c")["status"]["resourceHandle"]["name"] == kept and env.get_handle(kept) is not None
    reasons = [e["reason"] for e in env.events_in(env.op, "guid-pool2")]
    assert "DuplicateBinding" in reasons

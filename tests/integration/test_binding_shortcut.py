"""The exact-match binding shortcut (§3.8): ``D/resource-template-hash`` on unbound handles.

A claim first lists the unbound handles labelled with its own template hash and ranks only those; with none (or
none bindable) it lists every unbound handle as before. These tests check that the label is what the claim
computes (resources mode and provider mode), that the shortcut and the full listing pick the same handle, and
that a stale label is neither trusted nor kept.
"""

from __future__ import annotations

from typing import Any

import pytest

from poolboy import binding, keys, matching
from poolboy.context import Context, utcnow
from tests.integration.test_claim_support import ClaimEnv, env_fixture  # noqa: F401 - env_fixture provides "env"

INITIALISED = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "{ns}"}, "data": {"v": "foo"}}


def _label(env: ClaimEnv) -> str:
    return f"{env.d}/resource-template-hash"


def _ctx(env: ClaimEnv) -> Context:
    return Context(kube=env.kube, settings=env.settings, now=utcnow())


def _template(env: ClaimEnv) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": env.ns}, "data": {"v": "foo"}}


def _defaulting_provider(env: ClaimEnv) -> None:
    """Like the benchmark's provider: ``default`` fills apiVersion, kind and namespace at initialisation."""
    env.provider("p", {"default": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": env.ns}},
                       "matchIgnore": []})


def _pool(env: ClaimEnv, name: str, spec: dict[str, Any]) -> None:
    env.kube.create({"apiVersion": env.api, "kind": "ResourcePool", "metadata": {"name": name, "namespace": env.op},
                     "spec": spec})
    outcome = env.reconcile_once(keys.POOL, name)
    assert not isinstance(outcome, Exception), outcome


def _pool_handles(env: ClaimEnv, pool: str) -> list[dict[str, Any]]:
    return sorted(env.handles(**{f"{env.d}/resource-pool-name": pool}), key=lambda h: h["metadata"]["name"])


@pytest.fixture
def selectors(env: ClaimEnv, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every handle label selector the operator lists with (the real request still goes to devcluster)."""
    seen: list[str] = []
    real = env.kube.list

    def recording(api_version: str, kind: str, namespace: str | None = None, **kwargs: Any) -> list[dict]:
        if kind == "ResourceHandle":
            seen.append(kwargs.get("label_selector") or "")
        return real(api_version, kind, namespace, **kwargs)

    monkeypatch.setattr(env.kube, "list", recording)
    return seen


def _full_listings(env: ClaimEnv, seen: list[str]) -> list[str]:
    return [s for s in seen if s.startswith(f"!{env.d}/resource-claim-name") and _label(env) not in s]


def test_pool_handle_carries_the_hash_of_an_initialised_claim_and_is_bound_by_the_shortcut(
        env: ClaimEnv, selectors: list[str]) -> None:
    _defaulting_provider(env)
    _pool(env, "pool1", {"minAvailable": 2, "resources": [{"provider": env.provider_ref("p"),
                                                           "template": _template(env)}]})
    handles = _pool_handles(env, "pool1")
    assert len(handles) == 2
    labels = {h["metadata"]["labels"].get(_label(env)) for h in handles}
    assert len(labels) == 1 and None not in labels
    (value,) = labels
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": {"data": {"v": "foo"}}}]})
    selectors.clear()
    env.converge("c")
    bound = env.claim_handle("c")
    assert bound["metadata"]["name"] in {h["metadata"]["name"] for h in handles}
    assert any(s.endswith(f"{_label(env)}={value}") for s in selectors)
    assert _full_listings(env, selectors) == [], "the shortcut found the handle: no full listing"


def test_shortcut_and_full_listing_rank_the_same_handle_first(env: ClaimEnv) -> None:
    _defaulting_provider(env)
    exact = {"resources": [{"provider": env.provider_ref("p"), "template": _template(env)}]}
    superset = {"resources": [{"provider": env.provider_ref("p"),
                               "template": {**_template(env), "extra": "only-in-handle"}}]}
    for name, spec, ready in (("guid-a", exact, False), ("guid-b", exact, True), ("guid-c", superset, True)):
        handle = env.handle(name, spec, labels=binding.template_hash_labels(_ctx(env), spec["resources"]))
        handle["status"] = {"ready": ready, "healthy": True}
        env.kube.replace_status(handle)
    claim = env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": _template(env)}]})
    claim_resources = [{"provider": env.provider_ref("p"), "template": _template(env)}]
    ctx = _ctx(env)
    providers = {"p": env.kube.get(env.api, "ResourceProvider", "p", env.op)}
    first_round = next(binding.candidate_listings(ctx, claim, claim_resources))
    assert sorted(h["metadata"]["name"] for h in first_round) == ["guid-a", "guid-b"]
    shortcut = matching.rank_candidates(claim, first_round, providers, ctx.now, claim_resources=claim_resources)
    full = matching.rank_candidates(claim, binding.list_unbound(ctx, claim), providers, ctx.now,
                                    claim_resources=claim_resources)
    assert shortcut[0]["metadata"]["name"] == full[0]["metadata"]["name"] == "guid-b"
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] == "guid-b"


def test_stale_label_is_not_trusted_and_the_handle_reconcile_refreshes_it(env: ClaimEnv) -> None:
    _defaulting_provider(env)
    claim_resources = [{"provider": env.provider_ref("p"), "template": _template(env)}]
    wanted = binding.template_hash_labels(_ctx(env), claim_resources)
    changed = [{"provider": env.provider_ref("p"), "template": {**_template(env), "data": {"v": "bar"}}}]
    # labelled as if it matched, but its template was edited since: the claim must not bind it
    env.handle("guid-stale", {"resources": changed}, labels=wanted)
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": _template(env)}]})
    assert binding.list_exact(_ctx(env), env.get_claim("c"), claim_resources) == []
    assert isinstance(env.reconcile_once(keys.HANDLE, "guid-stale"), Exception) is False
    assert env.get_handle("guid-stale")["metadata"]["labels"][_label(env)] == \
        binding.template_hash_labels(_ctx(env), changed)[_label(env)]
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] != "guid-stale"
    assert "resourceClaim" not in env.get_handle("guid-stale")["spec"]


def test_unlabelled_matching_handle_is_still_bound_through_the_full_listing(env: ClaimEnv,
                                                                           selectors: list[str]) -> None:
    _defaulting_provider(env)
    env.handle("guid-plain", {"resources": [{"provider": env.provider_ref("p"), "template": _template(env)}]})
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": _template(env)}]})
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] == "guid-plain"
    assert _full_listings(env, selectors), "no exact match: the claim fell back to the full listing"


def test_exact_match_that_is_excluded_falls_back_to_the_full_listing(env: ClaimEnv) -> None:
    env.provider("p", {"default": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": env.ns}},
                       "matchIgnore": ["/data(/.*)?"]})
    exact = [{"provider": env.provider_ref("p"), "template": _template(env)}]
    sick = env.handle("guid-sick", {"resources": exact}, labels=binding.template_hash_labels(_ctx(env), exact))
    sick["status"] = {"healthy": False}
    env.kube.replace_status(sick)
    other = [{"provider": env.provider_ref("p"), "template": {**_template(env), "data": {"v": "ignored"}}}]
    env.handle("guid-other", {"resources": other}, labels=binding.template_hash_labels(_ctx(env), other))
    env.claim("c", {"resources": [{"provider": {"name": "p"}, "template": _template(env)}]})
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] == "guid-other"


def test_provider_pool_handle_gets_the_claims_hash_when_its_resources_are_generated(
        env: ClaimEnv, selectors: list[str]) -> None:
    env.configmap_provider("p", parameters=[{"name": "size", "default": {"value": "s"}}],
                           template={"definition": {"data": {"size": "{{ size }}"}}})
    _pool(env, "ppool", {"minAvailable": 1, "provider": {"name": "p", "parameterValues": {"size": "s"}}})
    (handle,) = _pool_handles(env, "ppool")
    assert _label(env) not in handle["metadata"]["labels"]  # resources not generated yet
    assert not isinstance(env.reconcile_once(keys.HANDLE, handle["metadata"]["name"]), Exception)
    handle = env.get_handle(handle["metadata"]["name"])
    assert handle["spec"]["resources"]
    assert handle["metadata"]["labels"][_label(env)] == matching.template_hash(handle["spec"]["resources"])
    env.claim("c", {"provider": {"name": "p", "parameterValues": {"size": "s"}}},
              annotations={f"{env.d}/resource-pool-name": "ppool"})
    selectors.clear()
    env.converge("c")
    assert env.claim_handle("c")["metadata"]["name"] == handle["metadata"]["name"]
    assert _full_listings(env, selectors) == [], "the provider-mode claim found the pool handle by its hash"

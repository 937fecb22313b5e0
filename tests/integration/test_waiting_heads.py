"""Which waiting claims a new unbound handle wakes (:meth:`cache.handle_index.RedisHandleIndex.waiting_heads`), on a
real redis-server: the oldest claims of each of the handle's scopes, as many as the scope has unbound handles. A claim
further back could not take a handle anyway (the reservation answers ``wait`` while as many older claims wait as
the scope has unbound handles), so waking it would cost a run and bind nothing."""

from __future__ import annotations

import pytest

from cache.store import scope
from workqueue import keyspace

API = "poolboy.gpte.redhat.com/v1"
DOMAIN = "poolboy.gpte.redhat.com"
HANDLE_SCOPES = ["provider=bench", "pool=p"]


def handle(name: str, pool: str | None = "p") -> dict:
    labels = {f"{DOMAIN}/resource-pool-name": pool} if pool else {}
    spec: dict = {"resources": [{"provider": {"name": "bench"}}]}
    if pool:
        spec["resourcePool"] = {"name": pool}
    return {"apiVersion": API, "kind": "ResourceHandle",
            "metadata": {"name": name, "namespace": "op", "resourceVersion": "1",
                         "creationTimestamp": "2026-11-28T00:00:00Z", "labels": labels}, "spec": spec}


def waiting_claim(name: str, minute: int, pool: str | None = None, provider: str = "bench") -> dict:
    """A claim labelled waiting, created at 00:<minute>: the queue is in creation order."""
    annotations = {f"{DOMAIN}/resource-pool-name": pool} if pool else {}
    return {"apiVersion": API, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "users", "uid": name, "resourceVersion": "1",
                         "creationTimestamp": f"2026-11-28T00:{minute:02d}:00Z", "annotations": annotations,
                         "labels": {f"{DOMAIN}/resource-claim-waiting": "true"}},
            "spec": {"provider": {"name": provider}}}


def test_a_pool_handle_wakes_as_many_of_the_oldest_pool_claims_as_the_pool_has_unbound_handles(cache, index) -> None:
    for minute, name in reversed(list(enumerate(["first", "second", "third", "fourth"]))):
        cache.put(waiting_claim(name, minute, pool="p"))  # stored newest first: the order is by creation
    cache.put(handle("h1"))
    assert index.waiting_heads(HANDLE_SCOPES) == [("users", "first")]
    cache.put(handle("h2"))
    assert index.waiting_heads(HANDLE_SCOPES) == [("users", "first"), ("users", "second")]


def test_every_scope_of_the_handle_is_served_and_other_scopes_are_not(cache, index) -> None:
    cache.put(waiting_claim("pool-claim", 1, pool="p"))
    cache.put(waiting_claim("provider-claim", 2))
    cache.put(waiting_claim("provider-claim-2", 3))
    cache.put(waiting_claim("other-provider", 0, provider="other"))
    cache.put(waiting_claim("other-pool", 0, pool="q"))
    cache.put(handle("h1"))
    heads = index.waiting_heads(HANDLE_SCOPES)
    assert heads is not None
    assert sorted(heads) == [("users", "pool-claim"), ("users", "provider-claim")], \
        "the head of the provider's queue and of the pool's; claims of another provider or pool cannot take it"


def test_no_unbound_handle_wakes_nobody(cache, index) -> None:
    cache.put(waiting_claim("first", 1, pool="p"))
    assert index.waiting_heads(HANDLE_SCOPES) == []


@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceHandle"])
def test_the_index_does_not_answer_before_the_watcher_has_listed_claims_and_handles(rb, cache, index, kind) -> None:
    cache.put(waiting_claim("first", 1, pool="p"))
    cache.put(handle("h1"))
    rb.srem(keyspace.CACHE_SYNCED, scope(API, kind, "*"))
    assert index.waiting_heads(HANDLE_SCOPES) is None, "the caller then lists every waiting claim"

"""A handle run that dies between creating a managed resource and writing the handle's status
(docs/behaviour.md#handles): nothing is lost and nothing is made twice.

The fault is a handle status write the API server refuses (every ``update`` of resourcehandles fails), which to the
run is the same as a crash right after the create: the reference was not recorded. The next run renders the resource
again; a name that carries the handle's guid comes out the same, so its create meets a 409 and it adopts the resource.
A name that does not is recorded *before* the create, so the refused write means no resource was made at all.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from poolboy.kube import ServerError
from tests.integration.handle_support import HandleEnv
from tests.integration.support import open_env


@pytest.fixture()
def faulty(fresh_devcluster) -> Iterator[tuple[HandleEnv, object]]:
    for env in open_env(fresh_devcluster, HandleEnv, prefix="hi"):
        yield env, fresh_devcluster


def configmaps(env: HandleEnv) -> list[dict]:
    return [cm for cm in env.kube.list("v1", "ConfigMap", env.ns) if cm["metadata"]["name"] != "kube-root-ca.crt"]


def test_a_resource_named_from_the_guid_is_adopted_by_the_next_run(faulty) -> None:
    env, cluster = faulty
    env.configmap_provider("cm")
    env.resources_handle("guid-crash", "cm", {"data": {"k": "v"}})
    cluster.set_faults(error_rate=1.0, codes=[500], verbs=["update"], kinds=["resourcehandles"])
    with pytest.raises(ServerError):  # a transient failure: the engine retries it with backoff
        env.reconcile("handle", "guid-crash")
    assert [cm["metadata"]["name"] for cm in configmaps(env)] == ["guid0-crash"], "created before the status write"
    assert not (env.get_handle("guid-crash").get("status") or {}).get("resources", [{}])[0].get("reference")

    cluster.clear_faults()
    env.converge("handle", "guid-crash")
    assert [cm["metadata"]["name"] for cm in configmaps(env)] == ["guid0-crash"], "adopted, not made again"
    reference = env.get_handle("guid-crash")["status"]["resources"][0]["reference"]
    assert reference["name"] == "guid0-crash"
    assert configmaps(env)[0]["metadata"]["annotations"][f"{env.d}/resource-handle-name"] == "guid-crash"


def test_a_name_without_the_guid_is_recorded_before_the_create(faulty) -> None:
    env, cluster = faulty
    env.configmap_provider("cm")
    env.resources_handle("guid-zq7xw", "cm", {"metadata": {"name": "fixed-name"}})
    cluster.set_faults(error_rate=1.0, codes=[500], verbs=["update"], kinds=["resourcehandles"])
    with pytest.raises(ServerError):
        env.reconcile("handle", "guid-zq7xw")
    assert configmaps(env) == [], "the refused reference write came first: nothing was created"

    cluster.clear_faults()
    env.converge("handle", "guid-zq7xw")
    assert [cm["metadata"]["name"] for cm in configmaps(env)] == ["fixed-name"]
    assert env.get_handle("guid-zq7xw")["status"]["resources"][0]["reference"]["name"] == "fixed-name"

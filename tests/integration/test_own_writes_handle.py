"""A handle run converges by itself when its own writes change what another of its definitions reads.

With own writes no longer running their key again (:mod:`engine.own_writes`), the handle reconciler must not count
on the watch event of a managed resource it just created or patched. The :class:`tests.converge.Converger` models
exactly that: it follows only the keys a result enqueues, never a watch event.
"""

from __future__ import annotations

from tests.integration import handle_support as support
from tests.integration.handle_support import HandleEnv

henv = support.henv  # the fixture


def _linked_to_a_later_resource(henv: HandleEnv, name: str) -> None:
    """Resource 0 (``app``) waits for resource 1 (``base``) and copies its URL: the later index is created first."""
    henv.configmap_provider("base", override={"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"namespace": henv.ns}, "data": {"url": "http://x"}})
    henv.configmap_provider("app", template={"enable": True}, linkedResourceProviders=[{
        "name": "base", "waitFor": "linked_resource_state.data.url | default('') != ''",
        "templateVars": [{"name": "base_url", "from": "/data/url"}]}],
        override={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": henv.ns},
                  "data": {"url": "{{ base_url }}"}})
    henv.handle(name, {"resources": [{"name": "app", "provider": henv.provider_ref("app")},
                                     {"name": "base", "provider": henv.provider_ref("base")}]})


def test_resource_waiting_for_a_later_one_is_created_in_the_same_run(henv: HandleEnv) -> None:
    _linked_to_a_later_resource(henv, "guid-later1")
    outcome = henv.reconcile("handle", "guid-later1")
    assert henv.configmap("guid1-later1") is not None, "base created"
    assert henv.configmap("guid0-later1")["data"] == {"url": "http://x"}, "app created in the same run"
    status = henv.get_handle("guid-later1")["status"]
    assert all("waitingFor" not in entry for entry in status["resources"])
    assert henv.key("handle", "guid-later1") not in outcome.wake, "converged: no second run needed"


def test_converged_handle_makes_no_write_and_asks_for_no_run(henv: HandleEnv) -> None:
    _linked_to_a_later_resource(henv, "guid-later2")
    henv.converge("handle", "guid-later2")
    rv = henv.get_handle("guid-later2")["metadata"]["resourceVersion"]
    outcome = henv.reconcile("handle", "guid-later2")
    assert henv.get_handle("guid-later2")["metadata"]["resourceVersion"] == rv
    assert henv.key("handle", "guid-later2") not in outcome.wake

"""``kubectl poolboy trace`` and ``why`` (docs/kubectl-poolboy.md) as a user whose only grant is ``edit`` in the
claim's namespace, through the real ``kubectl`` finding the plugin the project installs (``kubectl-poolboy`` beside
the virtualenv's python) on ``PATH``, against the real control plane where Poolboy runs as its chart's
ServiceAccounts. The handles, pools and providers in the operator's namespace are not the user's to read: the plugin
says so by name and shows what the claim's status records of them instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from stack.local import LocalStack
from tests.clusters import E2E_CLUSTER, e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import NS, D, User, condition, config_map_provider, status, user_with_role

pytestmark = [pytest.mark.skipif(E2E_CLUSTER != "real", reason="needs the real API server's users and RBAC"),
              pytest.mark.kubectl]

#: where ``pip install -e .`` (scripts/bootstrap.sh) puts the plugin: the virtualenv's bin, first on PATH
PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(e2e_options(workers=1, concurrency=2, env=dict(FAST_INTERVALS))) as running:
        yield running


@dataclass
class Plugin:
    """``kubectl poolboy`` as the user with ``edit`` in ``namespace`` runs it."""

    kubeconfig: Path
    namespace: str

    def __call__(self, *args: str, env_kubeconfig: bool = False) -> subprocess.CompletedProcess[str]:
        """``kubectl poolboy ARGS -n NAMESPACE``, the kubeconfig given by ``--kubeconfig`` or by ``KUBECONFIG``."""
        env = {**os.environ, "PATH": PATH}
        flags = ["-n", self.namespace]
        if env_kubeconfig:
            env["KUBECONFIG"] = str(self.kubeconfig)
        else:
            env.pop("KUBECONFIG", None)
            flags += ["--kubeconfig", str(self.kubeconfig)]
        result = subprocess.run(["kubectl", "poolboy", *args, *flags], capture_output=True, text=True, env=env,
                                timeout=60)
        assert "Traceback" not in result.stderr, result.stderr
        return result


def forbidden(kind: str, name: str) -> str:
    return f"cannot read {kind} {NS}/{name}: forbidden"


def test_trace_and_why_name_what_a_user_with_edit_may_not_read(stack: LocalStack) -> None:
    assert shutil.which("kubectl-poolboy", path=PATH), "kubectl-poolboy is not installed: run scripts/bootstrap.sh"
    admin = User(stack)
    ns = admin.namespace("kp")
    ready_provider, queued_provider, broken_provider, pool = f"{ns}-cm", f"{ns}-queued", f"{ns}-broken", f"{ns}-pool"
    admin.provider(ready_provider, config_map_provider(ns))
    admin.provider(queued_provider, config_map_provider(ns, disableCreation=True))
    admin.pool(pool, {"minAvailable": 0, "provider": {"name": queued_provider, "parameterValues": {}}})
    admin.provider(broken_provider, config_map_provider(ns, lifespan={"default": "banana"}))

    user = user_with_role(stack, "edit", ns)
    claims = client.CustomObjectsApi(user.api_client())

    def claim(name: str, provider: str, annotations: dict[str, str] | None = None) -> None:
        claims.create_namespaced_custom_object(D, "v1", ns, "resourceclaims", {
            "apiVersion": f"{D}/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"provider": {"name": provider, "parameterValues": {}}}})

    claim("ready", ready_provider)
    claim("queued", queued_provider, {f"{D}/resource-pool-name": pool})
    claim("broken", broken_provider)
    ready = admin.wait_claim(ns, "ready", lambda c: condition(c, "Ready").get("status") == "True", timeout=30,
                             message="Ready")
    admin.wait_claim(ns, "queued", lambda c: status(c).get("queue"), timeout=30, message="queued")
    admin.wait_claim(ns, "broken", lambda c: condition(c, "Synced").get("reason") == "ProviderInvalid", timeout=30,
                     message="ProviderInvalid")
    handle = status(ready)["resourceHandle"]["name"]
    config_map = status(ready)["resources"][0]["reference"]["name"]
    plugin = Plugin(user.kubeconfig, ns)

    # a Ready claim: its handle (unreadable, from the claim's status), the provider, the ConfigMap read live
    traced = plugin("trace", "claim", "ready")
    assert traced.returncode == 0, traced.stderr
    lines = traced.stdout.splitlines()

    def row(name: str) -> str:
        return next((line for line in lines if name in line), f"no row of {name}")

    assert "Bound=True" in row("ResourceClaim/ready") and "ResourcesReady" in row("ResourceClaim/ready"), lines
    assert "True*" in row(f"ResourceHandle/{handle}"), "ready, as the claim's status records it"
    assert "Ready" in row(f"ConfigMap/{config_map}") and "True" in row(f"ConfigMap/{config_map}"), lines
    assert forbidden("ResourceHandle", handle) in traced.stdout
    assert forbidden("ResourceProvider", ready_provider) in traced.stdout
    assert "cannot read ConfigMap" not in traced.stdout, "the user may read its own namespace's ConfigMaps"

    machine = plugin("trace", "rclaim/ready", "-o", "json", env_kubeconfig=True)
    assert machine.returncode == 0, machine.stderr
    tree: dict[str, Any] = json.loads(machine.stdout)
    (handle_node,) = tree["trace"]["children"]
    assert (handle_node["kind"], handle_node["name"], handle_node["unreadable"]) == ("ResourceHandle", handle,
                                                                                   "forbidden")
    assert [(n["kind"], n["name"], n["ready"]) for n in handle_node["children"] if n["kind"] == "ConfigMap"] == [
        ("ConfigMap", config_map, True)]

    why = plugin("why", "claim", "ready", env_kubeconfig=True)
    assert (why.returncode, why.stdout.splitlines()[0]) == (0, "Ready"), why.stdout + why.stderr

    # a claim that waits for a pool handle: its place in the queue, and the pool it may not read
    queued = plugin("why", "claim", "queued")
    assert queued.returncode == 1, queued.stdout + queued.stderr
    assert "Bound=False" in queued.stdout and f"ResourcePool {pool}: position 1 of 1" in queued.stdout, queued.stdout
    assert forbidden("ResourcePool", pool) in queued.stdout, queued.stdout

    # a claim whose provider is invalid: the claim's Synced condition names the error
    broken = plugin("why", "claim", "broken")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "Synced=False ProviderInvalid" in broken.stdout and "banana" in broken.stdout, broken.stdout
    assert forbidden("ResourceProvider", broken_provider) in broken.stdout, broken.stdout

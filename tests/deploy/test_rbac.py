"""The chart's RBAC against what the code really calls, both ways, and the rendered CRDs and RBAC applied to
devcluster with the real kubectl.

A real stack (devcluster, Redis, watcher, worker, beat through the ``poolboy`` CLI) runs a scenario with the API
audit on (stack/api_audit.py): the examples' provider, pool and claim (managed ConfigMaps), a parameter change, a
pool scaling, a claim deleted, a claim that expires and one that matches no provider. Then every request each
component made must be allowed to its ServiceAccount by the rendered RBAC, and every grant must have been used,
except the few in :data:`NOT_EXERCISED`, with the reason the scenario cannot reach them.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from stack.local import LocalStack, StackOptions
from tests.deploy.conftest import NAMESPACE, render
from tests.deploy.rbac import Grant, Request, audited_requests, grants_for
from tests.e2e.conftest import FAST_INTERVALS
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
D = "poolboy.gpte.redhat.com"
MANAGED = {"managedResources": [{"apiGroups": [""], "resources": ["configmaps"]}]}
ACCOUNTS = {"watcher": "pb-poolboy-watcher", "worker": "pb-poolboy-worker", "beat": "pb-poolboy-beat"}

#: (component, verb, group, resource): granted, but not reachable by this scenario on devcluster
NOT_EXERCISED = {
    ("worker", "get", "user.openshift.io", "users"): "requester lookup: OpenShift only",
    ("worker", "get", "user.openshift.io", "identities"): "requester lookup: OpenShift only",
    ("worker", "patch", "", "events"): "an Event's count when the same Event repeats (client-go aggregation)",
    ("worker", "update", D, "resourcepools/finalizers"):
        "blockOwnerDeletion on a scaling's pool owner reference; checked by OpenShift's admission, not a request",
}

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl")]


def kubectl(stack: LocalStack, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def audit() -> Iterator[tuple[dict[str, set[Request]], LocalStack]]:
    directory = Path(tempfile.mkdtemp(prefix="poolboy-audit-"))
    env = {**FAST_INTERVALS, "POOLBOY_API_AUDIT_DIR": str(directory), "POOLBOY_NAMESPACE": NAMESPACE}
    with LocalStack(StackOptions(workers=1, concurrency=2, namespace=NAMESPACE, env=env)) as stack:
        run_scenario(stack)
        yield audited_requests(directory), stack
    shutil.rmtree(directory, ignore_errors=True)


def run_scenario(stack: LocalStack) -> None:
    ok(kubectl(stack, "apply", "-f", str(ROOT / "examples")))
    ok(kubectl(stack, "wait", "--for=condition=Ready", "--timeout=60s", "-n", "demo", "rclaim/hello"))
    ok(kubectl(stack, "patch", "-n", "demo", "rclaim/hello", "--type", "merge",
               "-p", '{"spec":{"provider":{"parameterValues":{"greeting":"hi"}}}}'))
    scaling = {"apiVersion": f"{D}/v1", "kind": "ResourcePoolScaling",
               "metadata": {"name": "more", "namespace": NAMESPACE},
               "spec": {"resourcePool": {"name": "hello"}, "count": 1}}
    ok(kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump(scaling)))
    wait_for(lambda: ok(kubectl(stack, "get", "-n", NAMESPACE, "resourcepoolscaling/more",
                                "-o", "jsonpath={.status.state}")) == "done", timeout=60, message="scaling done")
    expiring = {"apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": "short", "namespace": "demo"},
                "spec": {"provider": {"name": "hello", "parameterValues": {"greeting": "bye"}},
                         "lifespan": {"end": "2000-01-01T00:00:00Z"}}}
    # a claim of resources without a provider: the worker lists every provider to match one (none matches here)
    unmatched = {"apiVersion": f"{D}/v1", "kind": "ResourceClaim", "metadata": {"name": "any", "namespace": "demo"},
                 "spec": {"resources": [{"template": {"apiVersion": "v1", "kind": "Secret", "metadata": {}}}]}}
    ok(kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump_all([expiring, unmatched])))
    ok(kubectl(stack, "wait", "--for=condition=Synced=False", "--timeout=60s", "-n", "demo", "rclaim/any"))
    ok(kubectl(stack, "delete", "-n", "demo", "rclaim/hello", "--timeout=60s"))
    wait_for(lambda: "short" not in kubectl(stack, "get", "rclaim", "-n", "demo", "-o", "name").stdout,
             timeout=60, message="the expired claim to be deleted by Poolboy")
    # the watcher renews its leadership Lease (an update) every retry period; a scenario quicker than that would
    # leave the grant unexercised, so wait for a renewal: renewTime moves past acquireTime
    wait_for(lambda: renewed(stack), timeout=30, message="the watcher to renew its Lease")


def renewed(stack: LocalStack) -> bool:
    spec = yaml.safe_load(ok(kubectl(stack, "get", "lease/poolboy-watcher", "-n", NAMESPACE, "-o", "yaml")))["spec"]
    return bool(spec.get("renewTime")) and spec.get("renewTime") != spec.get("acquireTime")


def chart_grants() -> dict[str, list[Grant]]:
    manifests = render(MANAGED)
    return {component: grants_for(manifests, account, NAMESPACE) for component, account in ACCOUNTS.items()}


def test_every_call_the_code_makes_is_allowed_to_its_service_account(audit) -> None:
    requests, _ = audit
    assert set(requests) >= {"watcher", "worker"}, requests.keys()
    grants = chart_grants()
    denied = [f"{component}: {request}" for component, made in requests.items() for request in sorted(made, key=str)
              if not any(grant.allows(request) for grant in grants[component])]
    assert denied == []


def test_beat_makes_no_api_call_so_it_mounts_no_token(audit) -> None:
    requests, _ = audit
    assert requests.get("beat", set()) == set()
    assert chart_grants()["beat"] == []


def _read_of(grant, request) -> bool:
    return request.verb in ("get", "list") and (request.group, request.resource) == (grant.group, grant.resource)


def test_every_grant_is_used_by_the_code(audit) -> None:
    """Every grant is used. A worker's read (get, list) counts as used when any component read that resource: the
    workers read through the shared cache the watcher fills, and need the grant for the API fallback on a miss (a
    flushed or unreachable cache), which a healthy run does not exercise."""
    requests, _ = audit
    everyone = [request for made in requests.values() for request in made]
    unused = []
    for component, grants in chart_grants().items():
        made = requests.get(component, set())
        for grant in grants:
            if (component, grant.verb, grant.group, grant.resource) in NOT_EXERCISED:
                continue
            fallback_read = component == "worker" and grant.verb in ("get", "list")
            used = any(grant.allows(request) for request in made) or \
                (fallback_read and any(_read_of(grant, request) for request in everyone))
            if not used:
                unused.append(f"{component}: {grant.verb} {grant.resource}.{grant.group or 'core'} ({grant.source})")
    assert sorted(set(unused)) == []


def test_rendered_crds_and_rbac_apply_to_devcluster(audit) -> None:
    _, stack = audit
    manifests = render({**MANAGED, "anarchy.enabled": True, "domain": "blue.gpte.redhat.com",
                        "crds.renderForDomain": True})
    wanted = {"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
              "RoleBinding"}
    chosen = [m for m in manifests if m["kind"] in wanted]
    for manifest in chosen:
        if manifest["metadata"].get("namespace") is None and manifest["kind"] in ("ServiceAccount", "Role",
                                                                                     "RoleBinding"):
            manifest["metadata"]["namespace"] = NAMESPACE
    chosen = [m for m in chosen if m["kind"] != "CustomResourceDefinition" or m["spec"]["group"] != D]  # crds/
    crds = [m for m in chosen if m["kind"] == "CustomResourceDefinition"]
    assert len(crds) == 6
    out = ok(kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump_all(chosen)))
    assert out.count("created") == len(chosen)
    served = ok(kubectl(stack, "api-resources", "--api-group", "blue.gpte.redhat.com", "-o", "name"))
    assert "resourceclaims.blue.gpte.redhat.com" in served.split()
    roles = ok(kubectl(stack, "get", "clusterrole", "pb-poolboy-anarchy-runner", "-o", "jsonpath={.rules[0].verbs}"))
    assert roles == '["get","list","watch","patch","delete"]'

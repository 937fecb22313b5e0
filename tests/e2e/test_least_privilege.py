"""Least privilege, judged by the real API server: the components run as the chart's ServiceAccounts with its RBAC
as rendered (``poolboy dev --service-accounts``), a scenario that touches every kind runs without one request
refused, and every rule of every component's role is needed: with it removed, the behaviour that needs it fails
with a 403 that the component reports clearly (a log line, a ``Forbidden`` condition where the object's status can
still be written), and with it restored the scenario converges (no crash, no hot loop).

The workers read through the shared cache the watcher keeps; their read grants are what they fall back on when the
cache cannot answer. This stack's worker runs with the cache off (``POOLBOY_READ_CACHE=false``), so each of its reads
goes to the API server and each read grant is put to the test.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client

from controlplane.audit import Request
from stack.local import CONFIGMAPS, LocalStack
from stack.service_accounts import ServiceAccountIdentities, render_chart
from tests.clusters import E2E_CLUSTER, e2e_options
from tests.e2e import openshift_users
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import NS, User, condition, config_map_provider, status, timestamp
from tests.waiting import wait_for

pytestmark = [pytest.mark.skipif(E2E_CLUSTER != "real", reason="devcluster has no authorization")]

D = "poolboy.gpte.redhat.com"
#: a refused object is re-checked this soon once its grant is back
RECHECK = "2"
#: seconds a scenario's expiring claim lives: long enough to be bound and have its resources made
EXPIRES = 5
#: claims from the pool the scenario makes at most: two replacements of one handle need two or three
POOL_CLAIMS = 4
#: the kinds the scenario's provider creates, and nothing else
MANAGED = [dict(CONFIGMAPS)]


@dataclass(frozen=True)
class Rule:
    """One rule of a role bound to a component's ServiceAccount, as the chart renders it."""

    component: str
    kind: str  # Role or ClusterRole
    role: str
    index: int
    rule: dict[str, Any]

    def __str__(self) -> str:
        names = f" {self.rule['resourceNames']}" if self.rule.get("resourceNames") else ""
        return (f"{self.component}:{self.role}:{','.join(self.rule['verbs'])}:"
                f"{','.join(self.rule['resources'])}{names}")


def bound_rules(manifests: list[dict[str, Any]], namespace: str) -> list[Rule]:
    """Every rule of every role the chart binds to the watcher's or the worker's ServiceAccount."""
    roles = {(m["kind"], m["metadata"]["name"]): m for m in manifests if m["kind"] in ("Role", "ClusterRole")}
    found = []
    for binding in (m for m in manifests if m["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        for subject in binding.get("subjects") or []:
            component = subject["name"].removeprefix("poolboy-")
            if subject["kind"] != "ServiceAccount" or component not in ("watcher", "worker"):
                continue
            ref = binding["roleRef"]
            role = roles[(ref["kind"], ref["name"])]
            found += [Rule(component, ref["kind"], ref["name"], index, rule)
                      for index, rule in enumerate(role["rules"])]
    return found


def chart_rules() -> list[Rule]:
    values = {"domain": D, "managedResources": MANAGED}
    return bound_rules(render_chart(NS, values), NS)


# --- the scenario every worker rule is tried against --------------------------------------------------------


class Scenario:
    """In a namespace of its own: a provider, a pool, a claim bound from it, a scaling of the pool, a claim that
    expires a few seconds after it is made, and a requester whose OpenShift user and identity exist; then (
    :meth:`change`) a parameter change of the bound claim. Together they need every grant."""

    def __init__(self, stack: LocalStack) -> None:
        self.user = User(stack)
        self.ns = f"lp-{uuid.uuid4().hex[:6]}"
        self.provider = f"p-{self.ns}"
        self.pool = f"pool-{self.ns}"

    def start(self) -> Scenario:
        requester = f"req-{self.ns}"
        openshift_users.create_user(self.user.custom.api_client, requester, email=f"{requester}@example.com")
        self.user.core.create_namespace({"metadata": {
            "name": self.ns, "annotations": {openshift_users.REQUESTER: requester}}})
        self.user.provider(self.provider, config_map_provider(self.ns))
        self.user.pool(self.pool, {"minAvailable": 1, "provider": {"name": self.provider, "parameterValues": {}}})
        self.user.custom.create_namespaced_custom_object(D, "v1", NS, "resourcepoolscalings", {
            "apiVersion": f"{D}/v1", "kind": "ResourcePoolScaling", "metadata": {"name": self.pool},
            "spec": {"resourcePool": {"name": self.pool}, "count": 1}})
        self.user.claim(self.ns, "c", {"provider": {"name": self.provider, "parameterValues": {}}})
        self.user.claim(self.ns, "expired", {"provider": {"name": self.provider, "parameterValues": {}},
                                             "lifespan": {"end": timestamp(timedelta(seconds=EXPIRES))}})
        return self

    def change(self) -> None:
        """A new parameter value for the bound claim, which its ConfigMap then shows; then claims from the pool, each
        once the pool holds its one available handle again, until the pool has created one handle twice and its
        ``HandlesCreated`` Event repeats (a patch of the Event's count). Whether claim ``c`` took a pool handle
        depends on whether the pool had one yet, so the number of claims this takes is not fixed."""
        self.user.patch_claim(self.ns, "c", {"spec": {"provider": {"parameterValues": {"greeting": "hi"}}}})
        wait_for(lambda: any(cm.data == {"greeting": "hi"} for cm in self.user.config_maps(self.ns)), timeout=30,
                 interval=0.3, message="the parameter change in the ConfigMap")
        for index in range(POOL_CLAIMS):
            if self.handles_created_repeated():
                return
            name = f"from-pool-{index}"
            self.user.claim(self.ns, name, {"provider": {"name": self.provider, "parameterValues": {}}})
            self.user.wait_bound(self.ns, name, timeout=30)
            wait_for(lambda: len(self.user.pool_handles(self.pool)) == 1, timeout=30, interval=0.3,
                     message=f"the pool to hold one available handle again after claim {name}")
        wait_for(self.handles_created_repeated, timeout=30, interval=0.3,
                 message="the pool's HandlesCreated Event to repeat")

    def handles_created_repeated(self) -> bool:
        return any(e.reason == "HandlesCreated" and (e.count or 1) > 1 for e in self.user.events(NS, self.pool))

    def converged(self) -> bool:
        claim = self.user.get_claim(self.ns, "c")
        scaling = self.user._get(NS, "resourcepoolscalings", self.pool)
        return (condition(claim or {}, "Ready").get("status") == "True"
                and status(scaling).get("state") == "done"
                and self.user.get_claim(self.ns, "expired") is None)


# --- fixtures -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_PERMANENT_ERROR_RECHECK": RECHECK}
    with LocalStack(e2e_options(workers=1, concurrency=2, env=env, managed_resources=MANAGED)) as running:
        assert running.cluster is not None
        openshift_users.install_api(running.cluster)
        # every read of the worker goes to the API server (see the module docstring)
        running.restart("worker-0", env={"POOLBOY_READ_CACHE": "false"})
        wait_ready(running, "worker-0")
        yield running


def wait_ready(stack: LocalStack, component: str) -> None:
    wait_for(lambda: stack._answers_ok(stack.readyz[component]), timeout=60, interval=0.2,
             message=f"{component} ready")


def identities(stack: LocalStack) -> ServiceAccountIdentities:
    assert stack.identities is not None
    return stack.identities


@contextlib.contextmanager
def without(stack: LocalStack, rule: Rule) -> Iterator[None]:
    """The role with ``rule`` removed (as an administrator would edit it), then the chart's RBAC applied again."""
    rbac = client.RbacAuthorizationV1Api(stack.cluster.api_client())  # type: ignore[union-attr]
    if rule.kind == "Role":
        role = rbac.read_namespaced_role(rule.role, NS)
        role.rules = [r for i, r in enumerate(role.rules) if i != rule.index]
        rbac.replace_namespaced_role(rule.role, NS, role)
    else:
        role = rbac.read_cluster_role(rule.role)
        role.rules = [r for i, r in enumerate(role.rules) if i != rule.index]
        rbac.replace_cluster_role(rule.role, role)
    try:
        yield
    finally:
        identities(stack).install_rbac()


class Log:
    """A component's log from now on."""

    def __init__(self, stack: LocalStack, component: str) -> None:
        self.path = stack.child(component).log_path
        self.offset = self.path.stat().st_size

    def lines(self) -> list[str]:
        with open(self.path, errors="replace") as log:
            log.seek(self.offset)
            return log.read().splitlines()

    def refusals(self) -> list[str]:
        return [line for line in self.lines() if "forbidden" in line.lower()]


# --- the tests ------------------------------------------------------------------------------------------------


def test_the_scenario_runs_without_one_request_refused(stack: LocalStack) -> None:
    scenario = Scenario(stack).start()
    wait_for(scenario.converged, timeout=60, interval=0.3, message="the scenario to converge")
    assert stack.denied() == []


#: (component, verb, resource) granted though never requested: an admission plugin checks them, so each is a rule of
#: its own, which :func:`test_each_rule_is_needed` removes
ADMISSION_CHECKED = {
    ("worker", "delete", "resourcepoolscalings"): "OwnerReferencesPermissionEnforcement: setting a scaling's owner",
    ("worker", "update", "resourcepools/finalizers"): "OwnerReferencesPermissionEnforcement: blockOwnerDeletion",
}


def requested(requests: list[Request], component: str, verb: str, group: str, resource: str,
              names: list[str]) -> bool:
    """Whether ``component`` made an allowed ``verb`` request on ``resource`` of ``group`` (by one of ``names``)."""
    user = f"system:serviceaccount:{NS}:poolboy-{component}"
    wanted = f"{resource}.{group}" if group else resource
    return any(r.user == user and r.verb == verb and r.resource == wanted and r.code < 400
               and (not names or r.name in names) for r in requests)


def test_every_verb_of_every_rule_is_requested(stack: LocalStack) -> None:
    """Each verb on each resource of each rule is a request the component made in the scenario (the first test's
    and this one's), as the API server's audit log records it; a removed rule then refuses real requests."""
    scenario = Scenario(stack).start()
    wait_for(scenario.converged, timeout=60, interval=0.3, message="the scenario to converge")
    scenario.change()
    requests = stack.cluster.requests()  # type: ignore[union-attr]
    unused = []
    for rule in chart_rules():
        for verb, group, resource in itertools.product(rule.rule["verbs"], rule.rule["apiGroups"],
                                                       rule.rule["resources"]):
            if (rule.component, verb, resource) in ADMISSION_CHECKED:
                assert len(rule.rule["verbs"]) == len(rule.rule["resources"]) == 1, rule
                continue
            if not requested(requests, rule.component, verb, group, resource, rule.rule.get("resourceNames") or []):
                unused.append(f"{rule.component}: {verb} {resource}.{group or 'core'}")
    assert unused == [], unused


def token_id(token: str) -> str:
    """The ``jti`` of a service-account token, as the API server's audit log names the credential."""
    payload = token.split(".")[1]
    return "JTI=" + json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["jti"]


def test_a_rotated_token_is_read_again_and_the_old_one_can_be_revoked(stack: LocalStack) -> None:
    """As the kubelet rotates a pod's token: the new one is written over the file, the worker's client reads it
    again (at most a minute later) and authenticates with it, and the old one revoked then changes nothing."""
    ids = identities(stack)
    old = ids.tokens["worker"].binding
    new = token_id(ids.project("worker"))
    worker = f"system:serviceaccount:{NS}:poolboy-worker"
    # the worker's periodic runs read from the API every few seconds (its cache is off)
    wait_for(lambda: any(r.user == worker and r.credential == new for r in stack.cluster.requests()),  # type: ignore[union-attr]
             timeout=90, interval=2, message="the worker to authenticate with the rotated token")
    ids.revoke(old)
    scenario = Scenario(stack).start()
    wait_for(scenario.converged, timeout=60, interval=0.3, message="the scenario to converge on the new token")
    assert stack.denied() == []


def test_beat_runs_without_credentials(stack: LocalStack) -> None:
    """beat makes no API call: its ServiceAccount mounts no token and no role binds it, and it runs without one."""
    beat = stack.child("beat").env
    assert not (identities(stack).mount("beat") / "token").exists()
    assert "KUBERNETES_SERVICE_HOST" in beat and beat["POOLBOY_SERVICE_ACCOUNT_DIR"].endswith("/beat")
    assert not any(rule.component == "beat" for rule in chart_rules())
    assert stack.child("beat").alive


def test_no_rule_grants_every_verb_or_resource() -> None:
    stars = [str(rule) for rule in chart_rules()
             if "*" in rule.rule["verbs"] or "*" in rule.rule["resources"] or "*" in rule.rule["apiGroups"]]
    assert stars == []


def test_the_watcher_lease_is_granted_by_name() -> None:
    """Only the Lease's create (which the API server cannot authorize by name) is granted without its name."""
    leases = [rule.rule for rule in chart_rules() if "leases" in rule.rule["resources"]]
    assert sorted((tuple(r["verbs"]), tuple(r.get("resourceNames") or ())) for r in leases) == [
        (("create",), ()), (("get", "update"), ("poolboy-watcher",))]


@pytest.mark.parametrize("rule", chart_rules(), ids=str)
def test_each_rule_is_needed(stack: LocalStack, rule: Rule) -> None:
    log = Log(stack, "watcher" if rule.component == "watcher" else "worker-0")
    denied_before = len(stack.denied())
    scenario = None
    with without(stack, rule):
        if rule.component == "watcher":
            if "create" in rule.rule["verbs"] and "leases" in rule.rule["resources"]:
                stack.cluster.request("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/"  # type: ignore[union-attr]
                                                "poolboy-watcher")
            stack.restart("watcher")
        else:
            scenario = Scenario(stack).start()
        wait_for(log.refusals, timeout=60, interval=0.3, message=f"{rule.component} to report the refusal")
        refused = stack.denied()[denied_before:]
        assert refused and all(f":poolboy-{rule.component}:" in r for r in refused), refused
        lines = log.lines()
        assert not [line for line in lines if line.startswith("Traceback")], "\n".join(lines[-80:])
    if rule.component == "watcher":
        wait_ready(stack, "watcher")
    else:
        assert scenario is not None
        wait_for(scenario.converged, timeout=60, interval=0.3, message="the scenario to converge once granted")


def test_a_kind_the_chart_does_not_grant_is_a_clear_error_on_the_claim(stack: LocalStack) -> None:
    """A provider that creates Secrets, which ``managedResources`` does not list: the claim says so (condition and
    Event, in the API server's words), and the refusal is not retried in a loop. Last in the module: the other tests
    count refusals, and this one makes some on purpose."""
    user = User(stack)
    ns = user.namespace("lp-secret")
    user.provider(f"{ns}-secret", {"override": {"apiVersion": "v1", "kind": "Secret",
                                                "metadata": {"name": "s-{{ guid }}", "namespace": ns}},
                                   "template": {"enable": True}})
    user.claim(ns, "c", {"provider": {"name": f"{ns}-secret", "parameterValues": {}}})
    claim = user.wait_claim(ns, "c", lambda c: condition(c, "Synced").get("reason") == "Forbidden", timeout=30)
    message = condition(claim, "Synced")["message"]
    assert 'resource "secrets"' in message and "managedResources" in message, message
    wait_for(lambda: any(e.reason == "Forbidden" for e in user.events(ns, "c")), timeout=15, interval=0.3,
             message="a Forbidden Event on the claim")

    def refusals() -> int:
        return len([r for r in stack.denied() if " secrets " in r and ns in r])

    first = refusals()
    wait_for(lambda: refusals() > first, timeout=30, interval=0.5, message="the re-check of the refused claim")
    # a measured window of five re-check intervals: each re-check of the handle and of the claim makes a few refused
    # requests, where a retry loop would make hundreds
    before, window = refusals(), 5 * float(RECHECK)
    time.sleep(window)
    assert refusals() - before <= 5 * 8, refusals() - before
    user.delete_claim(ns, "c")  # the refusals end with the claim
    user.wait_gone(ns, "c", timeout=30)

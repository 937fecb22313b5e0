"""The Helm chart checked with the real tools: ``helm lint --strict``, ``helm template`` over a matrix of value
sets with every built-in manifest validated by ``kubernetes-validate --strict``, the values schema rejecting bad
input with a clear message, and what the rendered objects promise (probes, ServiceAccounts, RBAC, policies)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils
import pytest

from poolboy.keys import KINDS, queue_for
from tests.deploy.conftest import CHART, NAMESPACE, by_kind, containers, helm, render

pytestmark = pytest.mark.helm

#: kinds whose schemas kubernetes-validate does not ship (they come from operators' CRDs)
NOT_BUILT_IN = {"ServiceMonitor", "ScaledObject", "TriggerAuthentication", "PrometheusRule"}

MATRIX: dict[str, dict[str, Any]] = {
    "defaults": {},
    "everything-on": {"flower.enabled": True, "dashboard.enabled": True, "metrics.serviceMonitor.enabled": True,
                      "metrics.prometheusRule.enabled": True,
                      "anarchy.enabled": True, "workers.groupDefaults.keda.enabled": True,
                      "managedResources": [{"apiGroups": [""], "resources": ["configmaps"]},
                                           {"apiGroups": ["anarchy.gpte.redhat.com"], "resources": ["anarchysubjects"],
                                            "namespaces": ["team-a", "team-b"]}]},
    "metrics-and-probes-off": {"metrics.enabled": False, "probes.enabled": False, "networkPolicy.enabled": False,
                               "podDisruptionBudget.enabled": False, "topologySpread.enabled": False,
                               "tests.enabled": False, "rbac.aggregateToDefaultRoles": False},
    "external-redis-tls": {"redis.url": "rediss://:secret@redis.example:6380/0",
                           "redis.tls.caSecret.name": "redis-ca"},
    "bundled-redis-tls-keda-flower-remote-control": {
        "redis.tls.enabled": True, "redis.tls.existingSecret": "redis-tls", "workers.groupDefaults.keda.enabled": True,
        "flower.enabled": True, "flower.remoteControl": True, "image.digest": "sha256:" + "0" * 64},
    "sentinel-from-secret": {"redis.existingSecret.name": "redis-url", "redis.sentinel.masterName": "mymaster"},
    "sentinel-url": {"redis.url": "sentinel://s1:26379;sentinel://s2:26379", "redis.sentinel.masterName": "mymaster"},
    "redis-no-auth-existing-flower-secret": {"redis.auth.enabled": False, "flower.enabled": True,
                                            "flower.basicAuth.existingSecret": "flower-users"},
    "hpa-and-extra-group": {"workers.groupDefaults.autoscaling.enabled": True,
                            "workers.groups.burst": {"queues": ["claims", "handles"]}},
    "anarchy-service-accounts": {"anarchy.enabled": True, "anarchy.serviceAccounts": [
        {"name": "anarchy-runner-default", "namespace": "anarchy-operator"}]},
    "other-domain": {"domain": "blue.gpte.redhat.com", "crds.renderForDomain": True, "logLevel": "DEBUG"},
}


def test_helm_lint_strict() -> None:
    for values in ([], ["--set", "flower.enabled=true", "--set", "dashboard.enabled=true"]):
        result = helm("lint", "--strict", str(CHART), *values)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def validate() -> Iterator[Callable[[dict[str, Any]], None]]:
    """kubernetes-validate --strict against the newest schemas it ships; each distinct manifest once, and its schema
    files read once (it re-reads a multi-megabyte definitions file per call otherwise)."""
    original = kubernetes_validate.utils.schema_contents
    kubernetes_validate.utils.schema_contents = functools.cache(original)
    seen: set[str] = set()

    def check(manifest: dict[str, Any]) -> None:
        text = json.dumps(manifest, sort_keys=True)
        if text not in seen:
            kubernetes_validate.validate(manifest, kubernetes_validate.latest_version(), strict=True)
            seen.add(text)

    yield check
    kubernetes_validate.utils.schema_contents = original


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_every_built_in_manifest_is_valid(name: str, validate: Callable[[dict[str, Any]], None]) -> None:
    manifests = render(MATRIX[name])
    assert manifests
    for manifest in manifests:
        if manifest["kind"] not in NOT_BUILT_IN:
            validate(manifest)


BAD_VALUES = [
    (["--set", "watcher.replicas=two"], "/watcher/replicas"),
    (["--set", "watcher.bogus=1"], "additional properties 'bogus'"),
    (["--set", "workers.concurrency=0"], "/workers/concurrency"),
    (["--set", "health.port=70000"], "/health/port"),
    (["--set", "logLevel=LOUD"], "/logLevel"),
    (["--set", "logFormat=xml"], "/logFormat"),
    (["--set", "domain=nodots"], "/domain"),
    (["--set-json", 'workers.groups.extra={"queues":["nonsense"]}'], "/workers/groups/extra/queues"),
    (["--set-json", 'workers.groups.extra={"replicas":2}'], "queues"),
    (["--set", "redis.url=http://redis:6379"], "/redis/url"),
    (["--set-json", 'managedResources=[{"apiGroups":[""]}]'], "resources"),
    (["--set", "redis.url=sentinel://s1:26379"], "redis.sentinel.masterName"),
    (["--set", "redis.sentinel.masterName=m"], "not a sentinel:// URL"),
    (["--set", "workers.taskEvents=sometimes"], "/workers/taskEvents"),
    (["--set", "redis.maxmemoryPercent=100"], "/redis/maxmemoryPercent"),
    (["--set", "redis.maxmemory=lots"], "/redis/maxmemory"),
]


@pytest.mark.parametrize(("args", "message"), BAD_VALUES, ids=[m for _, m in BAD_VALUES])
def test_bad_values_fail_with_a_clear_message(args: list[str], message: str) -> None:
    result = helm("template", "pb", str(CHART), *args)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def poolboy_pods(manifests: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    return {name: pod for name, pod in containers(manifests).items() if not name.endswith(("-redis", "-flower"))}


@pytest.mark.parametrize("metrics", [True, False])
def test_watcher_workers_and_beat_probe_their_health_endpoints(metrics: bool) -> None:
    pods = poolboy_pods(render({"metrics.enabled": metrics}))
    assert {"pb-poolboy-watcher", "pb-poolboy-beat", "pb-poolboy-worker-claims"} <= set(pods)
    for name, (_, container) in pods.items():
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}, name
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}, name
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}, name
        ports = {p["name"] for p in container["ports"]}
        assert "health" in ports and ("metrics" in ports) == (metrics and "beat" not in name), name
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["POOLBOY_HEALTH_ADDRESS"] == "0.0.0.0" and env["POOLBOY_HEALTH_PORT"] == "8081"


def test_one_service_account_per_component_and_no_token_where_no_api_call() -> None:
    manifests = render({"flower.enabled": True})
    accounts = by_kind(manifests, "ServiceAccount")
    pods = containers(manifests)
    used = {name: pod["serviceAccountName"] for name, (pod, _) in pods.items()}
    assert set(used.values()) <= set(accounts)
    assert used["pb-poolboy-watcher"] == "pb-poolboy-watcher"
    assert used["pb-poolboy-beat"] == "pb-poolboy-beat" and used["pb-poolboy-flower"] == "pb-poolboy-flower"
    assert {used[n] for n in pods if "-worker-" in n} == {"pb-poolboy-worker"}
    for name in ("pb-poolboy-beat", "pb-poolboy-flower", "pb-poolboy-redis"):
        assert pods[name][0]["automountServiceAccountToken"] is False, name
        assert accounts[name]["automountServiceAccountToken"] is False, name
    for name in ("pb-poolboy-watcher", "pb-poolboy-worker-claims"):
        assert pods[name][0]["automountServiceAccountToken"] is True


def test_log_level_and_format_reach_every_component() -> None:
    values = {"flower.enabled": True, "logLevel": "DEBUG", "logFormat": "json"}
    for name, (_, container) in containers(render(values)).items():
        if name.endswith("-redis"):
            continue
        args = container["args"]
        assert "--loglevel" not in args, f"{name}: one spelling, --log-level"
        assert args[args.index("--log-level") + 1] == "DEBUG", name
        assert args[args.index("--log-format") + 1] == "json", name


def test_worker_groups_serve_every_queue_and_a_new_group_needs_only_queues() -> None:
    manifests = render({"workers.groups.burst": {"queues": ["claims"]}})
    queues = set()
    for name, (_, container) in containers(manifests).items():
        if "-worker-" in name:
            queues.update(container["args"][container["args"].index("--queues") + 1].split(","))
    assert queues == {*(queue_for(kind) for kind in KINDS), "periodic"}
    burst = by_kind(manifests, "Deployment")["pb-poolboy-worker-burst"]
    assert burst["spec"]["replicas"] == 1  # from workers.groupDefaults
    assert "pb-poolboy-worker-burst" in by_kind(manifests, "PodDisruptionBudget")


def env_of(manifests: list[dict[str, Any]], deployment: str = "pb-poolboy-worker-claims") -> dict[str, Any]:
    return {e["name"]: e for e in containers(manifests)[deployment][1]["env"]}


def test_bundled_redis_has_generated_passwords_and_every_client_its_own() -> None:
    """Each client's user and password: tests/deploy/test_chart_redis.py."""
    manifests = render()
    secret = by_kind(manifests, "Secret")["pb-poolboy-redis"]
    assert len(secret["data"]["password"]) >= 40  # base64 of 32 random characters
    assert len(secret["data"]["worker-password"]) >= 40
    env = env_of(manifests)
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "pb-poolboy-redis", "key": "worker-password"}
    assert env["POOLBOY_REDIS_URL"]["value"] == "redis://worker:$(REDIS_PASSWORD)@pb-poolboy-redis:6379/0"
    redis = containers(manifests)["pb-poolboy-redis"][1]
    assert "--user" in redis["args"] and "--protected-mode" not in redis["args"]


def test_external_redis_sentinel_and_tls_values_become_env() -> None:
    env = env_of(render(MATRIX["sentinel-url"]))
    assert env["POOLBOY_REDIS_URL"]["value"] == "sentinel://s1:26379;sentinel://s2:26379"
    assert env["POOLBOY_REDIS_SENTINEL_MASTER"]["value"] == "mymaster"
    manifests = render(MATRIX["external-redis-tls"])
    assert "pb-poolboy-redis" not in containers(manifests)
    env = env_of(manifests)
    assert env["POOLBOY_REDIS_URL"]["value"].startswith("rediss://")
    assert env["POOLBOY_REDIS_TLS_CA_FILE"]["value"] == "/etc/poolboy/redis-tls/ca.crt"
    env = env_of(render(MATRIX["sentinel-from-secret"]))
    assert env["POOLBOY_REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"] == "redis-url"


def test_flower_basic_auth_comes_from_a_secret() -> None:
    manifests = render({"flower.enabled": True})
    secret = by_kind(manifests, "Secret")["pb-poolboy-flower-auth"]
    assert {"username", "password", "auth"} <= set(secret["data"])
    env = env_of(manifests, "pb-poolboy-flower")
    assert env["FLOWER_BASIC_AUTH"]["valueFrom"]["secretKeyRef"] == {"name": "pb-poolboy-flower-auth", "key": "auth"}
    env = env_of(render(MATRIX["redis-no-auth-existing-flower-secret"]), "pb-poolboy-flower")
    assert env["FLOWER_BASIC_AUTH"]["valueFrom"]["secretKeyRef"] == {"name": "flower-users", "key": "auth"}


@pytest.mark.parametrize(("values", "expected"), [
    ({}, "false"), ({"flower.enabled": True}, "true"),
    ({"workers.taskEvents": True}, "true"), ({"flower.enabled": True, "workers.taskEvents": False}, "false")])
def test_workers_send_task_events_where_flower_runs(values: dict[str, Any], expected: str) -> None:
    """Flower shows workers and tasks from their events: "auto" (the default) sends them when the chart runs Flower."""
    manifests = render(values)
    workers = [name for name in containers(manifests) if "-worker-" in name]
    assert workers and {env_of(manifests, name)["POOLBOY_TASK_EVENTS"]["value"] for name in workers} == {expected}


def selecting(policies: dict[str, dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """The policies whose podSelector selects a pod with ``labels`` (matchLabels, and In expressions)."""
    def selects(selector: dict[str, Any]) -> bool:
        if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
            return False
        return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))
    return [name for name, policy in policies.items() if selects(policy["spec"]["podSelector"])]


DNS = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
               "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
       "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}
REDIS_POD = {"app.kubernetes.io/name": "poolboy", "app.kubernetes.io/instance": "pb",
             "app.kubernetes.io/component": "redis"}
TO_REDIS = {"to": [{"podSelector": {"matchLabels": REDIS_POD}}], "ports": [{"port": 6379, "protocol": "TCP"}]}
MONITORING = {"monitoring.example/scrape": "true"}


def test_every_component_has_its_own_policy_in_and_out() -> None:
    manifests = render({"flower.enabled": True,
                        "networkPolicy.monitoringNamespaceSelector": {"matchLabels": MONITORING},
                        "networkPolicy.apiServer.cidrs": ["10.96.0.1/32", "172.18.0.2/32"]})
    policies = by_kind(manifests, "NetworkPolicy")
    for name, deployment in by_kind(manifests, "Deployment").items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert len(selecting(policies, labels)) == 1, f"{name} is selected by {selecting(policies, labels)}"
    assert all(p["spec"]["policyTypes"] == ["Ingress", "Egress"] for p in policies.values())
    api = {"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}],
           "to": [{"ipBlock": {"cidr": "10.96.0.1/32"}}, {"ipBlock": {"cidr": "172.18.0.2/32"}}]}
    monitoring = [{"namespaceSelector": {"matchLabels": MONITORING}}]
    for name in ("watcher", "worker"):
        spec = policies[f"pb-poolboy-{name}"]["spec"]
        assert spec["egress"] == [DNS, TO_REDIS, api]
        health, metrics = spec["ingress"]
        assert "from" not in health and health["ports"] == [{"port": "health", "protocol": "TCP"}]
        assert metrics == {"from": monitoring, "ports": [{"port": "metrics", "protocol": "TCP"}]}
    beat, flower = policies["pb-poolboy-beat"]["spec"], policies["pb-poolboy-flower"]["spec"]
    assert beat["egress"] == flower["egress"] == [DNS, TO_REDIS]  # no Kubernetes API call, no way to the API server
    assert beat["ingress"] == [{"ports": [{"port": "health", "protocol": "TCP"}]}]
    assert flower["ingress"] == [{"from": monitoring, "ports": [{"port": "http", "protocol": "TCP"}]}]


@pytest.mark.parametrize(("values", "selector"), [
    ({}, {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}),
    ({"networkPolicy.monitoringNamespace": "prom"}, {"matchLabels": {"kubernetes.io/metadata.name": "prom"}}),
    ({"networkPolicy.monitoringNamespace": ""}, {})])
def test_metrics_are_scraped_from_the_monitoring_namespace(values: dict[str, Any], selector: dict[str, Any]) -> None:
    spec = by_kind(render(values), "NetworkPolicy")["pb-poolboy-watcher"]["spec"]
    assert spec["ingress"][1]["from"] == [{"namespaceSelector": selector}]


def test_redis_admits_only_poolboy_pods_and_keda_and_sends_nothing() -> None:
    redis = by_kind(render(), "NetworkPolicy")["pb-poolboy-redis"]["spec"]
    assert redis["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "redis"
    assert redis["ingress"] == [{"from": [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": "poolboy", "app.kubernetes.io/instance": "pb"}}}],
        "ports": [{"port": "redis", "protocol": "TCP"}]}]
    assert "egress" not in redis and "Egress" in redis["policyTypes"]  # no egress rule: nothing out
    keda = by_kind(render({"workers.groupDefaults.keda.enabled": True}), "NetworkPolicy")["pb-poolboy-redis"]["spec"]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}}} in keda["ingress"][0]["from"]


def test_an_external_redis_is_reached_on_its_ports() -> None:
    policies = by_kind(render({"redis.url": "redis://r.example:6379/0",
                               "networkPolicy.externalRedis.cidrs": ["192.0.2.0/24"]}), "NetworkPolicy")
    assert "pb-poolboy-redis" not in policies
    assert policies["pb-poolboy-beat"]["spec"]["egress"][1] == {
        "ports": [{"port": 6379, "protocol": "TCP"}, {"port": 26379, "protocol": "TCP"}],
        "to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]}


def test_pdbs_and_topology_spread_for_watcher_and_workers() -> None:
    manifests = render()
    pdbs = by_kind(manifests, "PodDisruptionBudget")
    deployments = containers(manifests)
    for name in deployments:
        if "-watcher" in name or "-worker-" in name:
            assert pdbs[name]["spec"]["maxUnavailable"] == 1
            spread = deployments[name][0]["topologySpreadConstraints"][0]
            assert spread["topologyKey"] == "kubernetes.io/hostname"
            assert spread["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == name.split("pb-poolboy-")[1]
    assert by_kind(manifests, "Deployment")["pb-poolboy-beat"]["spec"]["replicas"] == 2


def rules(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_aggregated_roles_let_namespace_users_request_and_read_claims() -> None:
    roles = by_kind(render(), "ClusterRole")
    edit, view = roles["pb-poolboy-aggregate-to-edit"], roles["pb-poolboy-aggregate-to-view"]
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    d = "poolboy.gpte.redhat.com"
    assert {v for _, _, v in rules(edit)} >= {"create", "update", "patch", "delete"}
    assert rules(view) == {(d, "resourceclaims", v) for v in ("get", "list", "watch")}


@pytest.mark.parametrize("name", ["everything-on", "anarchy-service-accounts"])
def test_anarchy_runners_get_exactly_what_they_need(name: str) -> None:
    manifests = render(MATRIX[name])
    d = "poolboy.gpte.redhat.com"
    verbs = ("get", "list", "watch", "patch", "delete")
    assert rules(by_kind(manifests, "ClusterRole")["pb-poolboy-anarchy-runner"]) == {
        (d, "resourceclaims", v) for v in verbs}
    role = by_kind(manifests, "Role")["pb-poolboy-anarchy-runner"]
    assert role["metadata"]["namespace"] == NAMESPACE
    assert rules(role) == {(d, "resourcehandles", v) for v in verbs}
    subjects = by_kind(manifests, "ClusterRoleBinding")["pb-poolboy-anarchy-runner"]["subjects"]
    expected = ({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                 "name": "system:serviceaccounts:anarchy-operator"} if name == "everything-on" else
                {"kind": "ServiceAccount", "name": "anarchy-runner-default", "namespace": "anarchy-operator"})
    assert subjects == [expected]


def test_managed_resources_cluster_wide_or_in_named_namespaces() -> None:
    manifests = render(MATRIX["everything-on"])
    cluster = by_kind(manifests, "ClusterRole")
    assert rules(cluster["pb-poolboy-watcher-managed-resources"]) == {("", "configmaps", "list"),
                                                                      ("", "configmaps", "watch")}
    assert {v for _, _, v in rules(cluster["pb-poolboy-worker-managed-resources"])} == {
        "get", "create", "patch", "delete"}
    roles = [r for r in manifests if r["kind"] == "Role" and r["metadata"]["name"].endswith("-managed-resources")]
    assert sorted({r["metadata"]["namespace"] for r in roles}) == ["team-a", "team-b"]
    assert all(rules(r) <= {("anarchy.gpte.redhat.com", "anarchysubjects", v)
                            for v in ("list", "watch", "get", "create", "patch", "delete")} for r in roles)


def test_keda_scaled_object_replaces_the_hpa() -> None:
    manifests = render({"workers.groupDefaults.keda.enabled": True, "workers.groupDefaults.autoscaling.enabled": True})
    scaled = by_kind(manifests, "ScaledObject")["pb-poolboy-worker-pools"]
    lists = {t["metadata"]["listName"] for t in scaled["spec"]["triggers"] if t["type"] == "redis"}
    assert {"pools", "scalings", "providers", "pools\x06\x163"} <= lists
    assert any(t["type"] == "cpu" for t in scaled["spec"]["triggers"])
    assert not by_kind(manifests, "HorizontalPodAutoscaler")
    assert "pb-poolboy-keda-redis" in by_kind(manifests, "TriggerAuthentication")
    assert "replicas" not in by_kind(manifests, "Deployment")["pb-poolboy-worker-pools"]["spec"]


def test_dashboard_configmap_and_helm_test_hook() -> None:
    manifests = render({"dashboard.enabled": True})
    dashboard = by_kind(manifests, "ConfigMap")["pb-poolboy-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    test_pod = by_kind(manifests, "Pod")["pb-poolboy-test"]
    assert test_pod["metadata"]["annotations"]["helm.sh/hook"] == "test"


def test_the_validator_rejects_what_a_cluster_would(validate: Callable[[dict[str, Any]], None]) -> None:
    deployment = next(m for m in render() if m["kind"] == "Deployment")
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["paht"] = "/healthz"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)

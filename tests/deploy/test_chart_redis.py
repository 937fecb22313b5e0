"""The bundled Redis as the chart renders it: ACL users from ``helm/files/redis-acl.conf`` (the very rules
``stack/redis_acl.py`` gives the tests' Redis, checked on a real redis-server), one password per component, TLS,
maxmemory sized from the pod's limit, and images pinned by digest."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
import redis

from stack import redis_acl
from stack.redis_server import RedisServer
from tests.deploy.conftest import CHART, by_kind, containers, helm, render

pytestmark = pytest.mark.helm

REDIS = "pb-poolboy-redis"
PASSWORDS = {user: f"pw-{user}-0123456789" for user in (*redis_acl.COMPONENTS, redis_acl.ADMIN)}
COMPONENT_DEPLOYMENTS = {"watcher": "pb-poolboy-watcher", "worker": "pb-poolboy-worker-claims",
                         "beat": "pb-poolboy-beat", "flower": "pb-poolboy-flower"}
ROOT = "user chart-test-root on >root ~* &* +@all"


def redis_container(values: dict[str, Any] | None = None) -> dict[str, Any]:
    return containers(render(values))[REDIS][1]


def with_passwords(args: list[str]) -> list[str]:
    """The rendered arguments as Kubernetes expands them: ``$(REDIS_PASSWORD_<USER>)`` from the container's env."""
    return [re.sub(r"\$\(REDIS_PASSWORD_([A-Z]+)\)", lambda m: PASSWORDS[m.group(1).lower()], arg) for arg in args]


def acl_list(args: list[str]) -> list[str]:
    """ACL LIST of a real redis-server started with ``args`` (which define the tests' root user too)."""
    with RedisServer(args=args) as server:
        return redis.Redis(port=server.port, username="chart-test-root", password="root",
                           decode_responses=True).acl_list()


def canonical(acl: list[str]) -> dict[str, set[str]]:
    """ACL LIST as user -> its rules: Redis describes a user's permissions in an order of its own."""
    return {line.split()[1]: set(line.split()[2:]) for line in acl}


@pytest.mark.parametrize("remote_control", [False, True])
def test_the_rendered_users_are_the_file_s_as_the_tests_load_them(remote_control: bool, tmp_path: Any) -> None:
    """The chart's redis-server arguments and stack.redis_acl's ACL file give a real Redis the same users, so the
    integration test (tests/integration/test_redis_acl.py) runs the components against what the chart deploys."""
    rendered = redis_container({"flower.remoteControl": remote_control})["args"]
    acl_file = tmp_path / "users.acl"
    acl_file.write_text(redis_acl.acl_text(PASSWORDS, ["remote-control"] if remote_control else []) + ROOT + "\n")
    from_chart = acl_list([*with_passwords(rendered), *("--" + ROOT).split()])
    assert canonical(from_chart) == canonical(acl_list(["--aclfile", str(acl_file)]))
    assert any(line.startswith("user default off") for line in from_chart)
    flower = next(line for line in from_chart if line.startswith("user flower "))
    assert ("&/0.celery.pidbox" in flower) is remote_control


def test_every_component_connects_as_its_own_user_with_its_own_password() -> None:
    manifests = render({"flower.enabled": True})
    secret = by_kind(manifests, "Secret")[REDIS]
    assert {f"{user}-password" for user in redis_acl.COMPONENTS} | {"password"} == set(secret["data"])
    assert len(set(secret["data"].values())) == len(secret["data"]), "two users share a password"
    for user, deployment in COMPONENT_DEPLOYMENTS.items():
        env = {e["name"]: e for e in containers(manifests)[deployment][1]["env"]}
        assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": REDIS, "key": f"{user}-password"}
        assert env["POOLBOY_REDIS_URL"]["value"] == f"redis://{user}:$(REDIS_PASSWORD)@{REDIS}:6379/0"
    test_pod = by_kind(manifests, "Pod")["pb-poolboy-test"]["spec"]["containers"][0]
    assert {"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": REDIS, "key": "worker-password"}}} \
        in test_pod["env"]
    probe = containers(manifests)[REDIS][1]["readinessProbe"]["exec"]["command"]
    assert probe == ["redis-cli", "--user", "admin", "ping"]
    flower = containers(manifests)["pb-poolboy-flower"][1]["args"]
    assert flower[flower.index("--remote-control") + 1] == "off"


def test_keda_reads_queue_lengths_as_its_own_user() -> None:
    manifests = render({"workers.groupDefaults.keda.enabled": True})
    refs = {r["parameter"]: r for r in by_kind(manifests, "TriggerAuthentication")["pb-poolboy-keda-redis"]["spec"][
        "secretTargetRef"]}
    assert refs["password"]["key"] == "keda-password"
    assert base64.b64decode(by_kind(manifests, "Secret")[refs["username"]["name"]]["data"]["username"]) == b"keda"


def test_without_acl_users_one_password_serves_everyone_as_before() -> None:
    manifests = render({"redis.acl.enabled": False})
    args = containers(manifests)[REDIS][1]["args"]
    assert "--requirepass" in args and "--user" not in args
    assert set(by_kind(manifests, "Secret")[REDIS]["data"]) == {"password"}
    env = {e["name"]: e for e in containers(manifests)["pb-poolboy-watcher"][1]["env"]}
    assert env["POOLBOY_REDIS_URL"]["value"] == f"redis://:$(REDIS_PASSWORD)@{REDIS}:6379/0"


def test_an_external_redis_is_left_as_configured() -> None:
    manifests = render({"redis.url": "rediss://u:p@redis.example:6380/0"})
    assert REDIS not in containers(manifests)
    env = {e["name"]: e for e in containers(manifests)["pb-poolboy-watcher"][1]["env"]}
    assert env["POOLBOY_REDIS_URL"]["value"] == "rediss://u:p@redis.example:6380/0"


TLS = {"redis.tls.enabled": True, "redis.tls.existingSecret": "redis-tls", "workers.groupDefaults.keda.enabled": True}


def test_tls_for_the_bundled_redis() -> None:
    manifests = render(TLS)
    spec, redis_server = containers(manifests)[REDIS]
    args = redis_server["args"]
    assert args[args.index("--port") + 1] == "0" and args[args.index("--tls-port") + 1] == "6379"
    assert args[args.index("--tls-auth-clients") + 1] == "no"
    assert {"name": "tls", "secret": {"secretName": "redis-tls"}} in spec["volumes"]
    assert redis_server["readinessProbe"]["exec"]["command"][-4:] == ["--tls", "--cacert", "/etc/redis-tls/ca.crt",
                                                                      "ping"]
    for deployment in ("pb-poolboy-watcher", "pb-poolboy-worker-claims", "pb-poolboy-beat"):
        pod, container = containers(manifests)[deployment]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["POOLBOY_REDIS_URL"].startswith("rediss://")
        assert env["POOLBOY_REDIS_TLS_CA_FILE"] == "/etc/poolboy/redis-tls/ca.crt"
        volume = next(v for v in pod["volumes"] if v["name"] == "redis-tls")
        assert volume["secret"] == {"secretName": "redis-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    refs = {r["parameter"]: r for r in by_kind(manifests, "TriggerAuthentication")["pb-poolboy-keda-redis"]["spec"][
        "secretTargetRef"]}
    assert refs["ca"] == {"parameter": "ca", "name": "redis-tls", "key": "ca.crt"}
    assert base64.b64decode(by_kind(manifests, "Secret")[refs["tls"]["name"]]["data"]["tls"]) == b"enable"


def test_tls_without_its_secret_fails_at_render_time() -> None:
    result = helm("template", "pb", str(CHART), "--set", "redis.tls.enabled=true")
    assert result.returncode != 0 and "redis.tls.existingSecret" in result.stderr


def maxmemory(values: dict[str, Any]) -> str | None:
    args = redis_container(values)["args"]
    if "--maxmemory" not in args:
        return None
    assert args[args.index("--maxmemory-policy") + 1] == "noeviction"
    return args[args.index("--maxmemory") + 1]


@pytest.mark.parametrize(("values", "expected"), [
    ({}, str(int(512 * 2**20 * 0.8))),
    ({"redis.resources.limits.memory": "1Gi", "redis.maxmemoryPercent": 50}, str(2**29)),
    ({"redis.resources.limits.memory": "500M"}, "400000000"),
    ({"redis.resources.limits.memory": "1.5Gi"}, str(int(1.5 * 2**30 * 0.8))),
    ({"redis.resources.limits.memory": 1000000}, "800000"),
    ({"redis.maxmemory": "300mb"}, "300mb"),
    ({"redis.resources.limits.memory": None}, None),
])
def test_maxmemory_is_a_share_of_the_pod_s_memory_limit(values: dict[str, Any], expected: str | None) -> None:
    assert maxmemory(values) == expected


def test_a_memory_limit_maxmemory_cannot_be_computed_from_fails_clearly() -> None:
    result = helm("template", "pb", str(CHART), "--set", "redis.resources.limits.memory=1e9")
    assert result.returncode != 0 and "set redis.maxmemory" in result.stderr


def test_images_are_pinned_by_digest() -> None:
    assert re.fullmatch(r"docker\.io/library/redis:[0-9.]+-alpine@sha256:[0-9a-f]{64}", redis_container()["image"])
    digest = "sha256:" + "ab" * 32
    manifests = render({"image.repository": "registry.example/poolboy", "image.tag": "1.0", "image.digest": digest})
    images = {c["image"] for _, c in containers(manifests).values()} - {redis_container()["image"]}
    assert images == {f"registry.example/poolboy:1.0@{digest}"}
    result = helm("template", "pb", str(CHART), "--set", "image.digest=latest")
    assert result.returncode != 0 and "/image/digest" in result.stderr


def test_an_alert_fires_on_writes_redis_refuses_for_memory() -> None:
    rule = by_kind(render({"metrics.prometheusRule.enabled": True}), "PrometheusRule")["pb-poolboy"]
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r}
    refused = alerts["PoolboyRedisRefusesWrites"]
    assert "increase(poolboy_redis_oom_errors_total" in refused["expr"] and refused["labels"]["severity"] == "critical"
    assert "{{ $value | humanize }}" in refused["annotations"]["description"]  # for Prometheus, not for helm
    assert "redis_memory_used_bytes" in alerts["PoolboyRedisMemoryHigh"]["expr"]
    assert alerts["PoolboyRedisMemoryHigh"]["expr"].endswith("> 0.9")


def test_the_redis_memory_threshold_comes_from_the_values() -> None:
    rule = by_kind(render({"metrics.prometheusRule.enabled": True, "metrics.prometheusRule.redisMemoryThreshold": 0.8}),
                   "PrometheusRule")["pb-poolboy"]
    high = next(r for group in rule["spec"]["groups"] for r in group["rules"]
                if r.get("alert") == "PoolboyRedisMemoryHigh")
    assert high["expr"].endswith("> 0.8")

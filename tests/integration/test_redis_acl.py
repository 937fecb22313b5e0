"""Redis as a guarded boundary: the chart's ACL users (``helm/files/redis-acl.conf``, read by
:mod:`stack.redis_acl` as the chart reads it) on a real redis-server, with the real watcher, worker, beat and Flower
each connected as its own user.

A claim binds and becomes Ready with no command of any component refused (Redis's ACL LOG stays empty), and each
user is refused what it does not need: the dangerous commands for everyone, writes for Flower and KEDA, the cache's
writes for beat, commanding workers for everyone but the admin, and any connection without a user."""

from __future__ import annotations

import json
import secrets
import urllib.request
from collections.abc import Iterator

import pytest
import redis

from poolboy.kube import KubeClient
from procutil import free_port
from stack import redis_acl
from stack.local import LocalStack, StackOptions
from stack.redis_server import RedisServer
from tests.flower_pages import queue_depths
from tests.integration.example_claims import apply_examples, claim_ready, create_claim
from tests.waiting import wait_for
from workers.names import QUEUES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

#: the tests' own identity (as the admin kubeconfig is for the API): every command, to read the ACL LOG
ROOT = "acl-test-root"
PASSWORDS = {user: secrets.token_hex(16) for user in (*redis_acl.COMPONENTS, redis_acl.ADMIN, ROOT)}
#: short sweeps, so beat's cached sweeps and the worker's periodic tasks run during the test; Flower as the chart
#: runs it (listening only)
ENV = {"POOLBOY_MANAGE_CLAIMS_INTERVAL": "2", "POOLBOY_MANAGE_HANDLES_INTERVAL": "2",
       "POOLBOY_MANAGE_POOLS_INTERVAL": "2", "POOLBOY_RESYNC_INTERVAL": "5", "POOLBOY_TASK_EVENTS": "true",
       "POOLBOY_FLOWER_REMOTE_CONTROL": "false"}


@pytest.fixture(scope="module")
def acl_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server with exactly the chart's users (plus the tests' root). DEBUG and MODULE are enabled, so that
    the ACL is what refuses them (a server's default refuses them to everyone, before any ACL)."""
    acl_file = tmp_path_factory.mktemp("acl") / "users.acl"
    acl_file.write_text(redis_acl.acl_text(PASSWORDS) + f"user {ROOT} on >{PASSWORDS[ROOT]} ~* &* +@all\n")
    args = ["--aclfile", str(acl_file), "--enable-debug-command", "yes", "--enable-module-command", "yes"]
    with RedisServer(args=args) as server:
        yield server


def url_of(server: RedisServer, user: str) -> str:
    return redis_acl.url(server.url, user, PASSWORDS[user])


def client(server: RedisServer, user: str) -> redis.Redis:
    return redis.Redis.from_url(url_of(server, user), decode_responses=True)


@pytest.fixture(scope="module")
def stack(acl_redis: RedisServer) -> Iterator[LocalStack]:
    components = ("watcher", "worker", "beat", "flower")
    options = StackOptions(workers=1, concurrency=2, flower_port=free_port(), env=dict(ENV),
                           redis_url=url_of(acl_redis, ROOT),
                           redis_urls={name: url_of(acl_redis, name) for name in components})
    with LocalStack(options) as running:
        yield running


def flower_page(stack: LocalStack, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{stack.options.flower_port}{path}", timeout=10) as page:
        return page.read().decode()


def flower_json(stack: LocalStack, path: str) -> dict:
    return json.loads(flower_page(stack, path))


def refused(action: object) -> str:
    """The NOPERM message of an action that must be refused."""
    with pytest.raises(redis.exceptions.NoPermissionError) as raised:
        action()  # type: ignore[operator]
    return str(raised.value)


def test_a_claim_binds_with_every_component_as_its_own_user_and_nothing_refused(
        stack: LocalStack, acl_redis: RedisServer) -> None:
    root = client(acl_redis, ROOT)
    kube = KubeClient.from_settings(kubeconfig=str(stack.kubeconfig))
    apply_examples(kube)
    create_claim(kube, "acl")
    wait_for(lambda: claim_ready(kube, "acl"), timeout=60, interval=0.2,
             message=f"the claim to be Ready\n{stack.logs()}")
    # Flower, which may only listen, learnt of the worker and its reconciles from their events
    wait_for(lambda: any(flower_json(stack, "/api/workers?status=1").values()), timeout=20,
             message="Flower to see the worker online")
    def claim_task_seen() -> bool:
        tasks = flower_json(stack, "/api/tasks?taskname=poolboy.reconcile.claim")
        return any(task["args"] == "claim/demo/acl" for task in tasks.values())

    wait_for(claim_task_seen, timeout=20, interval=0.2, message="Flower to list the claim's reconcile")
    # its Broker page shows every queue's depth: lengths its user may read (and not change)
    assert set(queue_depths(flower_page(stack, "/broker"))) == set(QUEUES)
    # beat's sweeps ran meanwhile (from the cache) and the worker's periodic tasks: every user did its part
    users = {entry["user"] for entry in root.client_list()}
    assert {"watcher", "worker", "beat", "flower"} <= users, users
    denied = root.acl_log()
    assert not denied, f"commands the components sent were refused: {denied}"
    assert all(c.alive for c in stack.children), stack.logs()


@pytest.mark.parametrize("user", [*redis_acl.COMPONENTS, redis_acl.ADMIN])
def test_no_user_may_run_a_dangerous_command(acl_redis: RedisServer, user: str) -> None:
    r = client(acl_redis, user)
    assert "flushall" in refused(lambda: r.flushall())
    assert "flushdb" in refused(lambda: r.flushdb())
    assert "config" in refused(lambda: r.config_get("maxmemory"))
    assert "config" in refused(lambda: r.config_set("maxmemory", "1"))
    assert "keys" in refused(lambda: r.keys("*"))
    assert "debug" in refused(lambda: r.execute_command("DEBUG", "SLEEP", "0"))
    assert "shutdown" in refused(lambda: r.execute_command("SHUTDOWN", "NOSAVE"))
    assert "acl" in refused(lambda: r.acl_list())
    assert "module" in refused(lambda: r.execute_command("MODULE", "LIST"))
    assert "replicaof" in refused(lambda: r.execute_command("REPLICAOF", "127.0.0.1", "1"))
    assert "slaveof" in refused(lambda: r.execute_command("SLAVEOF", "127.0.0.1", "1"))
    assert "bgsave" in refused(lambda: r.bgsave())
    assert "save" in refused(lambda: r.save())
    assert "migrate" in refused(lambda: r.execute_command("MIGRATE", "127.0.0.1", "1", "k", "0", "1"))
    assert "monitor" in refused(lambda: r.execute_command("MONITOR"))
    assert "function" in refused(lambda: r.execute_command("FUNCTION", "FLUSH"))
    assert "script|flush" in refused(lambda: r.script_flush())


def test_a_client_without_a_user_is_refused(acl_redis: RedisServer) -> None:
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis.from_url(acl_redis.url).ping()
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis.from_url(redis_acl.url(acl_redis.url, "default", "")).ping()


def test_flower_and_keda_write_nothing_poolboy_or_celery_owns(acl_redis: RedisServer) -> None:
    for user in ("flower", "keda"):
        r = client(acl_redis, user)
        refused(lambda r=r: r.lpush("claims", "forged"))
        refused(lambda r=r: r.set("poolboy:queue:{claim/a/b}:pending", "x"))
        refused(lambda r=r: r.hset("poolboy:cache:o:x", "doc", "{}"))
        refused(lambda r=r: r.hget("unacked", "tag"))
        refused(lambda r=r: r.publish("/0.celeryev/task.multi", "forged event"))
    assert client(acl_redis, "flower").llen("claims\x06\x163") == 0  # its Broker page's question
    keda = client(acl_redis, "keda")
    assert keda.llen("claims\x06\x163") == 0  # what its scaler asks, and all it may
    assert "lpush" in refused(lambda: keda.lpush("claims\x06\x163", "x"))
    assert "key" in refused(lambda: keda.llen("poolboy:queue:due"))


def test_beat_reads_the_cache_but_cannot_write_it(acl_redis: RedisServer) -> None:
    beat = client(acl_redis, "beat")
    beat.hget("poolboy:cache:o:x", "doc")  # its manage sweeps answer from the cache
    assert "key" in refused(lambda: beat.hset("poolboy:cache:o:x", "doc", "{}"))
    assert "key" in refused(lambda: beat.sadd("poolboy:cache:synced", "forged"))
    assert "key" in refused(lambda: beat.delete("poolboy:cache:alive"))
    assert "key" in refused(lambda: beat.set("poolboy:epoch", "forged"))
    assert "key" in refused(lambda: beat.get("poolboy:runlog:{claim/a/b}:logged"))
    assert "publish" in refused(lambda: beat.publish("/0.celeryev/task.multi", "x"))


def test_only_the_admin_may_command_the_workers(acl_redis: RedisServer) -> None:
    for user in redis_acl.COMPONENTS:
        r = client(acl_redis, user)
        assert "no permissions" in refused(lambda r=r: r.publish("/0.celery.pidbox", "shutdown"))
    assert client(acl_redis, redis_acl.ADMIN).publish("/0.celery.pidbox", "{}") >= 0


def test_components_cannot_reach_each_others_keys(acl_redis: RedisServer) -> None:
    watcher, worker = client(acl_redis, "watcher"), client(acl_redis, "worker")
    assert "key" in refused(lambda: watcher.hset("poolboy:beat:resync", "x", "y"))
    assert "key" in refused(lambda: watcher.hget("unacked", "tag"))
    assert "key" in refused(lambda: worker.set("poolboy:beat::lock", "forged"))
    assert "key" in refused(lambda: worker.set("poolboy:other", "x"))


def test_the_watcher_may_publish_a_run_through_kombu_when_the_queue_did_not_push_it(acl_redis: RedisServer) -> None:
    """The fallback of :class:`engine.enqueue.Enqueuer`: a run the work queue's script did not push goes out through
    ``send_task``, which reads and declares kombu's routing tables; as the watcher's user it must not be refused."""
    from poolboy.settings import Settings
    from workers import config
    from workers.messages import CeleryPublisher
    from workers.names import route
    from workers.operator_app import OperatorApp
    from workqueue.queue import Publish

    settings = Settings(redis_url=url_of(acl_redis, "watcher"))
    app = OperatorApp("acl-test", settings=settings, set_as_current=False)
    app.config_from_object(config.build(settings))
    key = "claim/acl-ns/fallback"
    root = client(acl_redis, ROOT)
    root.delete("_kombu.binding.claims")  # as after a Redis loss: kombu declares the routing table again
    CeleryPublisher(app).publish([Publish(key, "fallback-msg", 1)])  # refused before: NOPERM on SADD _kombu.binding
    _, queue = route(key)
    assert root.smembers(f"_kombu.binding.{queue}"), "kombu declared the queue's routing table again"

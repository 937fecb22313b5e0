"""``poolboy watcher`` on the real work queue: an event becomes a pending key and one Celery message, which a second
event of the key joins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import redis

from engine.sweeps import cached_object_key
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from tests.waiting import wait_for
from workqueue.keyspace import pending as pending_key

ROOT = Path(__file__).resolve().parents[2]
API = "poolboy.gpte.redhat.com/v1"
SETTINGS = Settings()


def messages_naming(client: redis.Redis, key: str) -> int:
    """Reconcile messages for ``key`` waiting on the claims queue."""
    return sum(key.encode() in message for name in client.scan_iter(match="claims*", _type="list")
               for message in client.lrange(name, 0, -1))


def test_watcher_adds_keys_to_the_work_queue(devcluster, redis_server, tmp_path) -> None:
    kube = KubeClient.from_settings(Settings.from_env(api_timeout=10.0), kubeconfig=str(devcluster.kubeconfig))
    opns, userns = f"op-{uuid.uuid4().hex[:8]}", f"user-{uuid.uuid4().hex[:8]}"
    for name in (opns, userns):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    client = redis.Redis.from_url(redis_server.url)
    key = f"claim/{userns}/c1"
    client.delete(pending_key(key))
    log = tmp_path / "watcher.log"
    env = {**os.environ, "POOLBOY_NAMESPACE": opns, "POOLBOY_REDIS_URL": redis_server.url,
           "POOLBOY_WATCHER_LEASE_SECONDS": "3", "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "stack.cli", "watcher", "--kubeconfig",
                                    str(devcluster.kubeconfig), "--metrics-port", "0"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            kube.create({"apiVersion": API, "kind": "ResourceClaim",
                         "metadata": {"name": "c1", "namespace": userns}, "spec": {}})
            wait_for(lambda: client.exists(pending_key(key)), timeout=20,
                     message=f"{key} pending in the work queue; log: {log.read_text()[-1500:]}")
            wait_for(lambda: messages_naming(client, key), timeout=10,
                     message="a reconcile message for the claim on the claims queue")
            # a second event of the key while its run is owed: the watcher writes it into the cache, then adds
            # the key, which coalesces into the message queued already
            changed = kube.patch_merge(API, "ResourceClaim", "c1", userns, {"metadata": {"annotations": {"a": "b"}}})
            version = changed["metadata"]["resourceVersion"].encode()
            wait_for(lambda: client.hget(cached_object_key(SETTINGS, key), "rv") == version, timeout=10,
                     message="the watcher to take in the second event")
            assert messages_naming(client, key) == 1
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0, log.read_text()[-2000:]

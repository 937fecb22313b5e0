"""Redis refusing writes for memory (``maxmemory`` reached, policy ``noeviction``, as the chart runs it) under the
real stack: every component keeps running and says so in a clear line, nothing spins while Redis is full, and once
memory is freed a claim made meanwhile binds by itself.

Redis is made full for certain, not almost: filler keys are written, then ``maxmemory`` is set below what Redis
uses, so every write is refused for the whole window (a Redis just at its limit accepts some writes and refuses
others, which the second test covers)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest
import redis

from poolboy.kube import KubeClient
from stack.local import LocalStack, StackOptions
from stack.redis_server import RedisServer
from tests.integration.example_claims import apply_examples, claim_ready, create_claim
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ENV = {"POOLBOY_MANAGE_CLAIMS_INTERVAL": "2", "POOLBOY_MANAGE_HANDLES_INTERVAL": "2",
       "POOLBOY_MANAGE_POOLS_INTERVAL": "2", "POOLBOY_RESYNC_INTERVAL": "10"}
FILLER = [f"filler:{i}" for i in range(32)]
CHUNK = b"x" * 65536
#: the window Redis stays full, and what a stack may do in it at most
WINDOW_S = 12.0
REFUSED_LINE = "Redis refuses writes: it reached maxmemory"
RELIST_LINE = "re-listing everything"


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer(args=["--maxmemory", "16mb", "--maxmemory-policy", "noeviction"]) as running:
        yield running


@pytest.fixture(scope="module")
def stack(server: RedisServer) -> Iterator[LocalStack]:
    with LocalStack(StackOptions(workers=1, concurrency=2, redis_url=server.url, env=dict(ENV))) as running:
        apply_examples(KubeClient.from_settings(kubeconfig=str(running.kubeconfig)))
        yield running


def fill(r: redis.Redis) -> None:
    """Redis over its maxmemory: 2 MiB of filler, then maxmemory half a MiB below what it uses."""
    for name in FILLER:
        r.set(name, CHUNK)
    used = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory", used - 512 * 1024)


def free(r: redis.Redis) -> None:
    r.delete(*FILLER)


def commands(r: redis.Redis) -> int:
    return int(r.info("stats")["total_commands_processed"])


def log_since(stack: LocalStack, offsets: dict[str, int]) -> dict[str, str]:
    return {c.name: c.log_path.read_text(errors="replace")[offsets[c.name]:] for c in stack.children}


def test_a_full_redis_is_reported_without_a_crash_or_a_loop_and_work_resumes_when_memory_is_freed(
        stack: LocalStack, server: RedisServer) -> None:
    r = redis.Redis.from_url(server.url)
    kube = KubeClient.from_settings(kubeconfig=str(stack.kubeconfig))
    create_claim(kube, "before")
    wait_for(lambda: claim_ready(kube, "before"), timeout=30, interval=0.2, message=f"a claim Ready\n{stack.logs()}")
    pids = {c.name: c.process.pid for c in stack.children}
    idle_start, idle_began = commands(r), time.monotonic()
    time.sleep(3)  # the control: what the idle stack sends Redis per second
    idle_rate = (commands(r) - idle_start) / (time.monotonic() - idle_began)

    fill(r)
    offsets = {c.name: c.log_path.stat().st_size for c in stack.children}
    full_start, full_began = commands(r), time.monotonic()
    create_claim(kube, "during")
    time.sleep(WINDOW_S)  # what must not happen is watched over the whole window Redis is full
    full_rate = (commands(r) - full_start) / (time.monotonic() - full_began)
    logs = log_since(stack, offsets)

    assert all(c.alive and c.process.pid == pids[c.name] for c in stack.children), stack.logs()
    assert REFUSED_LINE in logs["watcher"], logs  # the claim's event reaches no worker: the watcher says why
    assert all(len(text.splitlines()) <= 4 for text in logs.values()), logs  # a line per 30 s, not per refusal
    assert not any("Traceback" in text for text in logs.values()), logs
    assert sum(text.count(RELIST_LINE) for text in logs.values()) == 0, logs
    assert full_rate < 3 * idle_rate + 50, f"{full_rate:.0f} Redis commands/s while full, {idle_rate:.0f} idle"
    assert not claim_ready(kube, "during")  # the control: Redis really refused the work

    free(r)
    wait_for(lambda: claim_ready(kube, "during"), timeout=60, interval=0.2,
             message=f"the claim made while Redis was full to be Ready\n{stack.logs()}")
    # the watcher's first heartbeat Redis accepts after its quiet period lists everything once, refilling the cache
    wait_for(lambda: RELIST_LINE in log_since(stack, offsets)["watcher"], timeout=30, interval=0.2,
             message="the watcher to list everything again")
    time.sleep(3)  # a second re-list would follow within its check interval
    relists = sum(text.count(RELIST_LINE) for text in log_since(stack, offsets).values())
    assert relists == 1, f"{relists} re-lists of everything after the refusals"


def test_a_redis_at_its_limit_neither_loops_nor_crashes(stack: LocalStack, server: RedisServer) -> None:
    """Just at the limit, some writes pass and others are refused: the watcher's cache writes fail while work queue
    marks pass, which made runs read a stale cache and write again and again."""
    r = redis.Redis.from_url(server.url)
    kube = KubeClient.from_settings(kubeconfig=str(stack.kubeconfig))
    r.config_set("maxmemory", "16mb")
    written = 0
    with contextlib.suppress(redis.exceptions.OutOfMemoryError):
        while written < 1024:
            r.set(f"edge:{written}", CHUNK)
            written += 1
    offsets = {c.name: c.log_path.stat().st_size for c in stack.children}
    create_claim(kube, "edge")
    time.sleep(WINDOW_S)
    runs = log_since(stack, offsets)["worker-0"].count("claim demo/edge:")
    r.delete(*[f"edge:{i}" for i in range(written)])
    assert all(c.alive for c in stack.children), stack.logs()
    assert runs <= 10, f"claim demo/edge ran {runs} times in {WINDOW_S:.0f}s at Redis's limit"
    wait_for(lambda: claim_ready(kube, "edge"), timeout=60, interval=0.2, message=f"the claim Ready\n{stack.logs()}")

"""Beat without a single point of failure: two ``poolboy beat`` replicas on celery-redbeat.

One holds the Redis lock and ticks; the other waits. SIGKILL the active one (no chance to release the lock): the
standby takes the lock once it expires (``POOLBOY_BEAT_LOCK_TIMEOUT``), and the deadlines beat drives keep firing —
an unbound pool handle's unclaimed lifespan end deletes it (delaying queue sweep) and the pool replaces it.
"""

from __future__ import annotations

import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
import redis

from stack import ports
from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import User, config_map_provider
from tests.waiting import wait_for

LOCK_TIMEOUT = 5
LOCK_KEY = "poolboy:beat::lock"
UNCLAIMED = 6


@pytest.fixture(scope="module")
def two_beats() -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_BEAT_LOCK_TIMEOUT": str(LOCK_TIMEOUT)}
    with LocalStack(e2e_options(workers=1, concurrency=2, env=env)) as stack:
        # the second beat starts once the first holds the lock: it is the standby, and its probes are served
        wait_for(lambda: "Acquired lock" in stack.child("beat").tail(100_000), timeout=20,
                 message="the first beat holding the lock")
        stack.component_env["beat-2"] = {"POOLBOY_HEALTH_PORT": str(ports.free())}
        stack.add("beat-2", "beat")
        yield stack


def active_beat(stack: LocalStack) -> str:
    """The beat whose log says it took the lock (the other one is still waiting for it)."""
    holders = [name for name in ("beat", "beat-2") if "Acquired lock" in stack.child(name).tail(100_000)]
    assert len(holders) <= 1, f"two beats hold the lock: {holders}\n{stack.logs()}"
    return holders[0] if holders else ""


def probe(stack: LocalStack, name: str, path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{stack.component_env[name]['POOLBOY_HEALTH_PORT']}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError as error:
        return 0, str(error)


def test_the_standby_beat_is_live_and_ready_while_it_waits_for_the_lock(two_beats: LocalStack) -> None:
    """A standby never ticks: its probes say it is healthy, else a kubelet restarts it forever (the chart's
    startup probe gives up after two minutes) and its Deployment never becomes Available."""
    stack = two_beats
    wait_for(lambda: probe(stack, "beat-2", "/healthz")[0] != 0, timeout=20, message="the standby's probes served")
    assert active_beat(stack) == "beat"
    for path in ("/healthz", "/readyz"):
        assert probe(stack, "beat-2", path)[0] == 200, f"the standby beat's {path}: {probe(stack, 'beat-2', path)}"


@pytest.mark.slow
def test_standby_beat_takes_over_and_deadlines_keep_firing(two_beats: LocalStack) -> None:
    stack = two_beats
    r = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    active = wait_for(lambda: active_beat(stack), timeout=20, message="one beat holding the lock")
    standby = "beat-2" if active == "beat" else "beat"
    token = r.get(LOCK_KEY)
    assert token, "the active beat's lock is not in Redis"

    user = User(stack)
    ns = user.namespace("beatha")
    user.provider("p-beatha", config_map_provider(ns, lifespan={"unclaimed": f"{UNCLAIMED}s"}))
    user.pool("pool-beatha", {"minAvailable": 1, "provider": {"name": "p-beatha", "parameterValues": {}}})
    first = wait_for(lambda: user.pool_handles("pool-beatha"), timeout=20, interval=0.1, message="pool handle")[0]
    name = first["metadata"]["name"]

    killed_at = time.monotonic()
    stack.child(active).signal(signal.SIGKILL)
    wait_for(lambda: r.get(LOCK_KEY) not in (None, token), timeout=LOCK_TIMEOUT + 15, interval=0.1,
             message="the standby beat taking the lock")
    takeover = time.monotonic() - killed_at
    # the lock in Redis changes hands before the new holder logs it
    wait_for(lambda: "Acquired lock" in stack.child(standby).tail(100_000), timeout=10, interval=0.1,
             message="the standby beat to log that it holds the lock")

    # The handle's unclaimed end passes after the kill: only a ticking beat (delaying queue sweep) deletes it.
    wait_for(lambda: user.get_handle(name) is None, timeout=UNCLAIMED + LOCK_TIMEOUT + 20, interval=0.1,
             message=f"unclaimed pool handle {name} deleted by the standby beat's sweeps")
    deleted = time.monotonic() - killed_at
    replacement = wait_for(
        lambda: [h for h in user.pool_handles("pool-beatha") if h["metadata"]["name"] != name],
        timeout=20, interval=0.1, message="the pool replacing the expired handle")[0]
    # ... and the replacement expires in its turn: the standby keeps firing, not just once.
    wait_for(lambda: user.get_handle(replacement["metadata"]["name"]) is None, timeout=UNCLAIMED + 20,
             interval=0.1, message="the replacement handle's unclaimed end firing too")
    print(f"\nbeat failover: lock taken by the standby {takeover:.1f}s after SIGKILL (lock timeout "
          f"{LOCK_TIMEOUT}s); expired pool handle deleted {deleted:.1f}s after the kill")

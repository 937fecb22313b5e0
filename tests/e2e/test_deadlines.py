"""docs/behaviour.md#periodic-work, on the running stack.

Three deadlines a user can watch: a handle whose provider reads the clock re-renders its time-dependent template
every ``POOLBOY_TIME_DEPENDENT_INTERVAL`` (5 s here), paced by that sweep and not by its resource's own update events;
a claim's future ``spec.lifespan.start`` is a deadline of its own (the claim's run is due at that time, not at some
later sweep): nothing happens before it, the claim binds after it; and an unbound pool handle's unclaimed lifespan end
likewise: the handle lives until then, and is deleted, and replaced by the pool, after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from poolboy import keys
from stack.local import LocalStack
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import NS, User, config_map_provider, parse, status, timestamp
from tests.waiting import holds_until, wait_for
from workqueue.keyspace import DUE

HANDLES_INTERVAL = float(FAST_INTERVALS["POOLBOY_TIME_DEPENDENT_INTERVAL"])
#: how long a deadline may take to be met on a loaded machine: a deadline for the test, not a measurement
PATIENCE = 30.0


def now() -> datetime:
    return datetime.now(UTC)


def due_at(stack: LocalStack, key: str) -> datetime | None:
    """When ``key``'s next run is due, from the delaying queue."""
    client = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    try:
        score = client.zscore(DUE, key)
    finally:
        client.close()
    return None if score is None else datetime.fromtimestamp(score, UTC)


def nothing_before(deadline: datetime, read: Callable[[], Any], happened: Callable[[Any], Any], what: str) -> None:
    """Until ``deadline``, ``happened(read())`` stays false (a read that began after the deadline may see it)."""
    def invariant() -> None:
        began = now()
        value = read()
        assert began >= deadline or not happened(value), f"{what} before {deadline}: {value}"

    holds_until(invariant, lambda: now() >= deadline, timeout=(deadline - now()).total_seconds() + 5, interval=0.2,
                message=f"{deadline}")


def test_a_time_dependent_template_is_re_rendered_every_interval(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("clock")
    user.provider("p-clock", config_map_provider(
        ns, override={"metadata": {"name": "cm-{{ guid }}"}, "data": {"time": "{{ now(True, '%H:%M:%S') }}"}}))
    user.claim(ns, "c", {"provider": {"name": "p-clock", "parameterValues": {}}})
    claim = user.wait_bound(ns, "c")
    cm = f"cm-{claim['status']['resourceHandle']['name'][len('guid-'):]}"

    def rendered() -> str | None:
        return ((user.config_map(ns, cm) or {}).get("data") or {}).get("time")

    first = wait_for(rendered, timeout=PATIENCE, interval=0.1, message="first render")
    # the early renders follow the bind and the resource's own events; from a re-render on, the sweep drives it
    seen = [wait_for(lambda: (value := rendered()) != first and value, timeout=PATIENCE, interval=0.1,
                     message="a re-render")]
    window = 4 * HANDLES_INTERVAL
    end = time.monotonic() + window
    while time.monotonic() < end:
        value = rendered()
        if value and value != seen[-1]:
            seen.append(value)
        time.sleep(0.1)
    # the control: the sweep re-rendered within the window, so it is long enough to show the pace; a loop on the
    # ConfigMap's update events would re-render about every second (the template's resolution), some 20 times
    renders = seen[1:]
    assert len(renders) >= 2, f"re-rendered only {renders} within {window}s\n{stack.logs()}"
    assert len(renders) <= window / HANDLES_INTERVAL + 2, seen


def test_future_lifespan_start_binds_after_its_time_and_not_before(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("start5")
    user.provider("p-start5", config_map_provider(ns, lifespan={"default": "1h"}))
    requested = timestamp(timedelta(seconds=5))
    start = parse(requested)
    user.claim(ns, "c", {"provider": {"name": "p-start5", "parameterValues": {}}, "lifespan": {"start": requested}})
    due = wait_for(lambda: due_at(stack, keys.make(keys.CLAIM, ns, "c")), timeout=PATIENCE,
                   message="the claim's run scheduled")
    assert due == start, f"the claim's run is due at {due}, not at its lifespan start {start}"

    nothing_before(start, lambda: user.get_claim(ns, "c"), lambda c: status(c).get("resourceHandle"), "bound")
    claim = user.wait_bound(ns, "c", timeout=PATIENCE)
    assert parse(status(claim)["lifespan"]["start"]) >= start


def test_unclaimed_pool_handle_lives_until_its_end_and_is_then_replaced(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("unclaimed")
    user.provider("p-unclaimed", config_map_provider(ns, lifespan={"unclaimed": "6s"}))
    user.pool("pool-unclaimed", {"minAvailable": 1, "provider": {"name": "p-unclaimed", "parameterValues": {}}})
    first = wait_for(lambda: user.pool_handles("pool-unclaimed"), timeout=PATIENCE, interval=0.1,
                     message="pool handle")[0]
    name = first["metadata"]["name"]
    end = parse(first["spec"]["lifespan"]["end"])
    assert end - parse(first["metadata"]["creationTimestamp"]) == timedelta(seconds=6)
    due = wait_for(lambda: due_at(stack, keys.make(keys.HANDLE, NS, name)), timeout=PATIENCE,
                   message="the handle's run scheduled")
    assert due == end, f"the handle's run is due at {due}, not at its unclaimed end {end}"

    nothing_before(end, lambda: user.get_handle(name),
                   lambda h: h is None or h["metadata"].get("deletionTimestamp"), "deleted")
    wait_for(lambda: user.get_handle(name) is None, timeout=PATIENCE, interval=0.1,
             message=f"expired pool handle {name} deleted")
    wait_for(lambda: [h for h in user.pool_handles("pool-unclaimed") if h["metadata"]["name"] != name],
             timeout=PATIENCE, interval=0.1, message="pool replaces the expired handle")

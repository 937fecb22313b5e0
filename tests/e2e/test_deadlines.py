"""docs/behaviour.md#periodic-work, on the running stack.

Three deadlines a user can watch: a handle whose provider reads the clock re-renders its time-dependent template
every ``POOLBOY_TIME_DEPENDENT_INTERVAL`` (5 s here), a claim's future ``spec.lifespan.start`` binds within about a
second of that time (not at the next 5 s claim sweep), and an unbound pool handle's unclaimed lifespan end
deletes it — and the pool replaces it — close to its ``spec.lifespan.end``.
"""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta

from stack.local import LocalStack
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import User, config_map_provider, parse, timestamp
from tests.waiting import wait_for

HANDLES_INTERVAL = float(FAST_INTERVALS["POOLBOY_TIME_DEPENDENT_INTERVAL"])
#: how late a deadline may fire: the due sweep ticks every second, plus a reconcile and the test's own polling
SLACK = 2.5


def now() -> datetime:
    return datetime.now(UTC)


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

    seen = [wait_for(rendered, timeout=10, interval=0.1, message="first render")]
    patience = 4 * HANDLES_INTERVAL + SLACK
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline and len(seen) < 4:
        value = rendered()
        if value and value != seen[-1]:
            seen.append(value)
        time.sleep(0.1)
    assert len(seen) >= 4, f"re-rendered only {seen} within {patience}s\n{stack.logs()}"
    # Early renders follow the bind and the resource's own events; once settled, the sweep drives it (not a hot
    # loop on the ConfigMap's update events): the last renders are about one interval apart.
    gaps = [(datetime.strptime(b, "%H:%M:%S") - datetime.strptime(a, "%H:%M:%S")).seconds
            for a, b in itertools.pairwise(seen)]
    assert HANDLES_INTERVAL - 2 <= gaps[-1] <= HANDLES_INTERVAL + SLACK, (seen, gaps)


def test_future_lifespan_start_binds_close_to_its_time(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("start5")
    user.provider("p-start5", config_map_provider(ns, lifespan={"default": "1h"}))
    start = timestamp(timedelta(seconds=5))
    user.claim(ns, "c", {"provider": {"name": "p-start5", "parameterValues": {}}, "lifespan": {"start": start}})

    def bound() -> datetime | None:
        claim = user.get_claim(ns, "c") or {}
        return now() if (claim.get("status") or {}).get("resourceHandle") else None

    bound_at = wait_for(bound, timeout=15, interval=0.05, message="claim bound after its lifespan start")
    assert bound_at >= parse(start), f"bound at {bound_at} before its start {start}"
    assert (bound_at - parse(start)).total_seconds() <= SLACK, f"bound at {bound_at}, start {start}"


def test_unclaimed_pool_handle_is_replaced_close_to_its_end(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("unclaimed")
    user.provider("p-unclaimed", config_map_provider(ns, lifespan={"unclaimed": "6s"}))
    user.pool("pool-unclaimed", {"minAvailable": 1, "provider": {"name": "p-unclaimed", "parameterValues": {}}})
    first = wait_for(lambda: user.pool_handles("pool-unclaimed"), timeout=10, interval=0.1, message="pool handle")[0]
    name = first["metadata"]["name"]
    end = parse(first["spec"]["lifespan"]["end"])
    assert end - parse(first["metadata"]["creationTimestamp"]) == timedelta(seconds=6)

    gone_at = wait_for(lambda: now() if user.get_handle(name) is None else None, timeout=15, interval=0.05,
                       message=f"expired pool handle {name} deleted")
    assert gone_at >= end and (gone_at - end).total_seconds() <= SLACK, f"deleted at {gone_at}, end {end}"

    def replacement() -> datetime | None:
        others = [h for h in user.pool_handles("pool-unclaimed") if h["metadata"]["name"] != name]
        return now() if others else None

    replaced_at = wait_for(replacement, timeout=10, interval=0.05, message="pool replaces the expired handle")
    assert (replaced_at - end).total_seconds() <= SLACK + 1, f"replaced at {replaced_at}, end {end}"

"""Warnings before a claim's lifespan ends, on the running stack: with ``POOLBOY_LIFESPAN_WARNINGS=30s,15s``
a claim whose lifespan is 45 s gets one Warning Event ``LifespanEnding`` per lead time, never before it, the
``LifespanEnding`` condition and ``status.lifespan.warnings``; extending the lifespan warns again for the new end.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from stack.local import LocalStack
from tests.clusters import e2e_options
from tests.e2e.conftest import FAST_INTERVALS
from tests.e2e.provider_support import User, condition, config_map_provider, parse, status, timestamp
from tests.waiting import wait_for

#: the due sweep ticks every second, one reconcile, the test's own polling
SLACK = timedelta(seconds=3)


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    env = {**FAST_INTERVALS, "POOLBOY_LIFESPAN_WARNINGS": "30s,15s"}
    with LocalStack(e2e_options(workers=1, concurrency=2, env=env)) as running:
        yield running


def warnings_for(user: User, ns: str, end: str) -> dict[str, int]:
    """Events ``LifespanEnding`` of claim ``c`` that name ``end``, counted per lead time (aggregates included)."""
    counts: dict[str, int] = {}
    for event in user.events(ns, "c"):
        if event.reason == "LifespanEnding" and end in event.message:
            assert event.type == "Warning"
            lead = event.message.split("(warning ", 1)[1].split(" ", 1)[0]
            counts[lead] = counts.get(lead, 0) + (event.count or 1)
    return counts


def wait_warning(user: User, ns: str, end: str, lead: str, seconds: int) -> None:
    """Wait for the ``lead`` warning about ``end`` and check it did not come before ``end - seconds``."""
    wait_for(lambda: lead in warnings_for(user, ns, end), timeout=seconds + 30, interval=0.2,
             message=f"warning {lead} before {end}")
    seen = datetime.now(UTC)
    assert seen >= parse(end) - timedelta(seconds=seconds), f"warning {lead} came early: {seen} for end {end}"
    assert seen <= parse(end) - timedelta(seconds=seconds) + SLACK, f"warning {lead} came late: {seen} for {end}"


def test_warnings_at_each_lead_time_and_again_after_an_extension(stack: LocalStack) -> None:
    user = User(stack)
    ns = user.namespace("warn")
    user.provider("p-warn", config_map_provider(ns, lifespan={"default": "45s", "maximum": "10m"}))
    user.claim(ns, "c", {"provider": {"name": "p-warn", "parameterValues": {}}})
    claim = user.wait_claim(ns, "c", lambda c: status(c).get("lifespan", {}).get("firstReady")
                            and status(c)["lifespan"].get("end"), timeout=30, message="first ready, with an end")
    end = status(claim)["lifespan"]["end"]
    assert not warnings_for(user, ns, end), "no warning 45 s before the end"

    wait_warning(user, ns, end, "30s", 30)
    wait_warning(user, ns, end, "15s", 15)
    claim = user.get_claim(ns, "c") or {}
    assert status(claim)["lifespan"]["warnings"] == {"end": end, "sent": ["30s", "15s"]}
    ending = condition(claim, "LifespanEnding")
    assert (ending["status"], ending["reason"]) == ("True", "LifespanEnding")
    assert end in ending["message"]

    new_end = timestamp(timedelta(seconds=25))
    user.patch_claim(ns, "c", {"spec": {"lifespan": {"end": new_end}}})
    user.wait_claim(ns, "c", lambda c: status(c).get("lifespan", {}).get("end") == new_end, timeout=15,
                    message="the extended end")
    wait_for(lambda: "30s" in warnings_for(user, ns, new_end), timeout=10, interval=0.2,
             message="the 30s warning again at once: the new end is 25 s away")
    wait_warning(user, ns, new_end, "15s", 15)
    assert warnings_for(user, ns, end) == {"30s": 1, "15s": 1}, "each lead time warned once for the first end"
    assert warnings_for(user, ns, new_end) == {"30s": 1, "15s": 1}, "and once for the new end"
    assert status(user.get_claim(ns, "c"))["lifespan"]["warnings"] == {"end": new_end, "sent": ["30s", "15s"]}

"""The pool-cost benchmark's configurations and figures (benchmarks/pool_costs.py): the plain pool is today's (no
standby or reuse field anywhere), each other configuration adds only its feature, and the figures come from the
controller's sums at the day's marks and the claims' Ready times."""

from __future__ import annotations

from benchmarks.pool_costs import Ledger, parse, pool_spec, provider_spec, summary, table


def test_plain_is_todays_pool_and_each_configuration_adds_only_its_feature() -> None:
    args = parse(["--pool", "5", "--running", "2"])
    assert "standby" not in pool_spec("plain", args) and pool_spec("plain", args)["minAvailable"] == 5
    assert {"standby", "reuse"}.isdisjoint(provider_spec("plain"))
    assert pool_spec("standby", args)["standby"] == {"running": 2}
    assert provider_spec("standby")["standby"]["patch"] == {"spec": {"running": False}}
    assert "reuse" not in provider_spec("standby")
    both = provider_spec("standby+reuse")
    assert both["standby"] == provider_spec("standby")["standby"]
    assert "wipeRequest" in both["reuse"]["cleanupPatch"]["spec"] and both["reuse"]["cleanedCheck"]


def test_summary_scales_the_days_machine_seconds_and_counts_what_was_served() -> None:
    args = parse(["--seconds", "100"])
    ledger = Ledger(created={"c0": 0.0, "c1": 10.0, "c2": 20.0}, ready={"c0": 0.5, "c1": 14.0},
                    running_s={"start": 50.0, "day": 450.0, "end": 550.0}, machines={"start": 4, "end": 9},
                    unbound_before=4, running_before=4, unbound_after=5, machines_after=6)
    figures = summary("plain", ledger, args)
    assert figures["running_machine_seconds_day"] == 400.0 and figures["running_machine_seconds_window"] == 500.0
    # 4 Machines on average through a day compressed 864 times: 96 handle-hours a real day
    assert figures["running_handle_hours_per_real_day"] == 96.0
    assert figures["handles_provisioned"] == 5
    assert (figures["unbound_before"], figures["unbound_after"], figures["machines_after"]) == (4, 5, 6)
    assert "| plain | 400.0 / 96.0 h / 500.0 | 5 | 0.5 / 4.0 s | 50% | 2 / 3 | 4 (4) | 5, 6 |" in table([figures])
    assert (figures["claims"], figures["served"], figures["ready_within_1s"]) == (3, 2, 0.5)
    assert figures["ready_s"] == {"p50": 0.5, "p99": 4.0, "max": 4.0}


def test_a_configuration_the_operator_does_not_have_is_reported_so() -> None:
    shown = table([{"configuration": "standby", "available": False, "why": "no Machine went on standby"},
                   {"configuration": "standby+reuse", "available": True, "failed": "the pool at rest within 38 s"}])
    assert "| standby | not available: no Machine went on standby |" in shown
    assert "| standby+reuse | failed: the pool at rest within 38 s |" in shown

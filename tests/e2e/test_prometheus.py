"""``poolboy dev --prometheus-port`` as an operator uses it: metrics on by default (a free port per component, listed
in the ready output), Prometheus scraping every component and Flower with Poolboy's rules loaded, and after a burst of
claims every panel query of the shipped Grafana dashboard (``helm/dashboards/poolboy.json``) answers with data."""

from __future__ import annotations

import contextlib
import json
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from procutil import free_port
from tests.e2e.provider_support import User, condition, config_map_provider, status
from tests.e2e.test_dev import Dev
from tests.waiting import wait_for

DASHBOARD = Path(__file__).resolve().parents[2] / "helm" / "dashboards" / "poolboy.json"
#: Grafana's rate window, as a query in the dashboard sees it: a few scrapes of this test's Prometheus
RATE_INTERVAL = "30s"
#: queries whose series need more than a burst: their metric is checked to be known to Prometheus instead
NEEDS_MORE_THAN_A_BURST = {
    # a pool's forecast exists once it has learned a whole `period` (at least 96 s)
    "poolboy_pool_autoscaling_expected_per_hour": "an autoscaling pool's learned period",
}

pytestmark = pytest.mark.prometheus


@dataclass
class KubeconfigOnly:
    """What :class:`User` needs of a stack: the kubeconfig ``poolboy dev`` wrote."""

    kubeconfig: Path


def panel_queries() -> list[str]:
    """Every ``expr`` of every panel (rows' panels included), as the dashboard has them."""

    def walk(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [p for panel in panels for p in (panel, *walk(panel.get("panels", [])))]

    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in walk(dashboard["panels"]) for target in panel.get("targets", [])]


class PrometheusAPI:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return self.get("/api/v1/query", query=expr.replace("$__rate_interval", RATE_INTERVAL))["result"]


def test_prometheus_scrapes_every_component_and_each_dashboard_query_has_data_after_a_burst(tmp_path: Path) -> None:
    prometheus_port, flower_port = free_port(), free_port()
    dev = Dev(tmp_path, "--prometheus-port", str(prometheus_port), "--prometheus-interval", "1",
              "--flower-port", str(flower_port))
    try:
        dev.wait_line("poolboy dev ready", timeout=120)
        dev.wait_line("Prometheus: ", timeout=10)
        listed = [line for line in dev.output() if "metrics of " in line]
        assert [line.split("metrics of ")[1].split(":")[0] for line in listed] == ["watcher", "worker-0"], listed
        api = PrometheusAPI(f"http://127.0.0.1:{prometheus_port}")

        settle(lambda: sorted({"watcher", "worker", "flower"} - {r["metric"]["job"] for r in api.query("up == 1")}),
               timeout=15, what="components Prometheus does not scrape")

        claims = burst(User(KubeconfigOnly(tmp_path / "kubeconfig")))
        wait_for(lambda: sum(float(r["value"][1]) for r in api.query("poolboy_claim_ready_seconds_count"))
                 >= claims, timeout=30, message="Prometheus seeing every claim of the burst ready")

        queries = [q for q in panel_queries() if not any(name in q for name in NEEDS_MORE_THAN_A_BURST)]
        assert len(queries) >= 25, queries  # the dashboard's panels were found

        settle(lambda: [query for query in queries if not api.query(query)], timeout=20,
               what="dashboard queries without data after the burst")
        for name in NEEDS_MORE_THAN_A_BURST:
            assert api.get("/api/v1/metadata", metric=name), f"{name} unknown to Prometheus"

        groups = api.get("/api/v1/rules")["groups"]
        assert {group["name"] for group in groups} >= {"poolboy-recording", "poolboy-alerts", "poolboy-redis"}
        settle(lambda: [rule for group in api.get("/api/v1/rules")["groups"] for rule in group["rules"]
                        if rule["health"] != "ok" or not rule.get("lastEvaluation", "").startswith("2")],
               timeout=10, what="rules not evaluated, or evaluated with an error")
        # healthy after the burst (the pools refilled, every provider in sync): no alert pending, none firing
        settle(lambda: api.get("/api/v1/alerts")["alerts"], timeout=15, what="alerts on a healthy system")
    finally:
        assert dev.stop() == 0


def settle(wrong: Callable[[], list[Any]], timeout: float, what: str) -> None:
    """Poll ``wrong`` (what is still not as it should be) until it returns nothing; fail with its last answer."""
    last: list[Any] = []

    def fine() -> bool:
        last[:] = ["no answer: the check raised"]  # stays so when wrong() raises
        last[:] = wrong()
        return not last

    with contextlib.suppress(AssertionError):
        wait_for(fine, timeout=timeout, interval=0.5)
    assert not last, f"{what}: {last}"


def burst(user: User) -> int:
    """Warm hits, an unready bind, a cold creation and a claim that waits, from an autoscaling pool, a pool whose
    handles never get ready and a provider that serves from pools only; returns how many claims became Ready."""
    ns = user.namespace("prom")
    user.provider("p-prom", config_map_provider(ns))
    user.provider("p-unready", config_map_provider(ns, readinessCheck="false"))
    user.provider("p-waiting", config_map_provider(ns, disableCreation=True))
    user.pool("pool-prom", {"minAvailable": 2, "provider": {"name": "p-prom", "parameterValues": {}},
                            "autoscaling": {"maxAvailable": 4}})
    user.pool("pool-unready", {"minAvailable": 1, "provider": {"name": "p-unready", "parameterValues": {}}})
    wait_for(lambda: sum(1 for h in user.pool_handles("pool-prom") if status(h).get("ready")) == 2, timeout=30,
             message="2 ready handles in pool-prom")
    wait_for(lambda: len(user.pool_handles("pool-unready")) == 1, timeout=30, message="pool-unready's handle")
    names = [f"warm-{i}" for i in range(4)]
    for name in names:
        user.claim(ns, name, {"provider": {"name": "p-prom", "parameterValues": {}}})
    user.claim(ns, "cold", {"provider": {"name": "p-prom", "parameterValues": {"greeting": "other"}}})
    user.claim(ns, "unready", {"provider": {"name": "p-unready", "parameterValues": {}}})
    user.claim(ns, "waiting", {"provider": {"name": "p-waiting", "parameterValues": {}}})
    for name in [*names, "cold"]:
        user.wait_claim(ns, name, lambda c: condition(c, "Ready").get("status") == "True", timeout=30,
                        message="Ready")
    user.wait_bound(ns, "unready")
    return len(names) + 1

"""Poolboy's Prometheus rules (``helm/files/prometheus-rules.yaml``): valid for ``promtool check rules``, their alerts
unit-tested by ``promtool test rules`` (a stuck queue, a pool at zero, a failing provider fire; a healthy system fires
none), and the very groups the chart's PrometheusRule carries."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import CHART, by_kind, render

RULES = CHART / "files" / "prometheus-rules.yaml"
RULE_TESTS = CHART / "files" / "prometheus-rules.test.yaml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60, cwd=RULES.parent)


def alerts(path: Path) -> list[str]:
    return [rule["alert"] for group in yaml.safe_load(path.read_text())["groups"] for rule in group["rules"]
            if "alert" in rule]


@pytest.mark.promtool
def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.promtool
def test_promtool_unit_tests_of_the_alerts_pass() -> None:
    result = promtool("test", "rules", RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_quiet_on_a_healthy_system() -> None:
    tests: list[dict[str, Any]] = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    healthy = next(test for test in tests if test["name"] == "healthy")
    quiet = {case["alertname"] for case in healthy["alert_rule_test"] if case["exp_alerts"] == []}
    firing = {case["alertname"] for test in tests for case in test.get("alert_rule_test", []) if case["exp_alerts"]}
    assert set(alerts(RULES)) == quiet == firing


@pytest.mark.helm
def test_the_chart_s_prometheus_rule_carries_the_file_s_groups() -> None:
    rule = by_kind(render({"metrics.prometheusRule.enabled": True}), "PrometheusRule")["pb-poolboy"]
    assert rule["spec"]["groups"] == yaml.safe_load(RULES.read_text())["groups"]

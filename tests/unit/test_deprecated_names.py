"""Renamed settings and metrics keep their old names for one release: an operator's environment, dashboards and
alerts written for the old ones keep working (with a warning for the settings) while they move."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from engine.metrics import DEPRECATED_NAMES, WithDeprecatedNames
from poolboy.settings import DEPRECATED_ENV, Settings, warn_deprecated


@pytest.mark.parametrize(("field", "old"), sorted(DEPRECATED_ENV.items()))
def test_an_old_environment_variable_is_still_read_with_a_warning(field: str, old: str,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    warn_deprecated.cache_clear()
    with caplog.at_level(logging.WARNING, logger="poolboy.settings"):
        settings = Settings.from_env({old: "7"})
        again = Settings.from_env({old: "7"})
    assert getattr(settings, field) == getattr(again, field) == 7
    warned = [r for r in caplog.records if old in r.getMessage() and settings.env_names[field] in r.getMessage()]
    assert len(warned) == 1, "once per process, however often the settings are built"


def test_the_new_name_wins_over_the_old_one() -> None:
    settings = Settings.from_env({"POOLBOY_GATE_LEASE_SECONDS": "7", "POOLBOY_WORKQUEUE_LEASE_SECONDS": "12"})
    assert settings.workqueue_lease_seconds == 12


def test_a_renamed_family_is_served_under_both_names_with_the_same_samples() -> None:
    source = CollectorRegistry()
    adds = Counter("poolboy_workqueue_adds_total", "adds", ["outcome"], registry=source)
    adds.labels(outcome="added").inc(3)
    Histogram("poolboy_workqueue_wait_seconds", "wait", buckets=(1,), registry=source).observe(0.5)
    Counter("poolboy_kept_total", "not renamed", registry=source).inc()
    served = CollectorRegistry()
    served.register(WithDeprecatedNames(source))
    text = generate_latest(served).decode()
    for name in ("poolboy_workqueue_adds_total", "poolboy_gate_adds_total"):
        assert f'{name}{{outcome="added"}} 3.0' in text
    for name in ("poolboy_workqueue_wait_seconds", "poolboy_gate_wait_seconds"):
        assert f'{name}_bucket{{le="1.0"}} 1.0' in text and f"{name}_count 1.0" in text
    assert "# HELP poolboy_gate_adds_total Deprecated: renamed poolboy_workqueue_adds." in text
    assert text.count("poolboy_kept_total 1.0") == 1


def test_every_gauge_computed_at_scrape_time_keeps_its_old_name() -> None:
    class Gauges:
        def collect(self):  # type: ignore[no-untyped-def]
            for name in DEPRECATED_NAMES:
                yield GaugeMetricFamily(name, "gauge", value=1)

    served = CollectorRegistry()
    served.register(WithDeprecatedNames(Gauges()))  # type: ignore[arg-type]
    names = {family.name for family in served.collect()}
    assert names == set(DEPRECATED_NAMES) | set(DEPRECATED_NAMES.values())

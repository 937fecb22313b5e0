"""A gauge a collector computes at scrape time, declared once with its name, help and labels.

Counters and histograms are objects of their own (``prometheus_client``); a gauge family built on scrape exists only
while it is collected. Declaring it as a :class:`GaugeSpec` at module level gives the collector its family and the
metrics reference (``stack/metrics_reference.py``) its help and labels from the same line.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily


@dataclass(frozen=True)
class GaugeSpec:
    name: str
    documentation: str
    labels: tuple[str, ...] = ()

    def family(self) -> GaugeMetricFamily:
        """An empty family of this gauge, for the collector to add its samples to."""
        return GaugeMetricFamily(self.name, self.documentation, labels=list(self.labels))

    def single(self, value: float) -> GaugeMetricFamily:
        """The family with its one unlabelled sample."""
        family = self.family()
        family.add_metric([], value)
        return family

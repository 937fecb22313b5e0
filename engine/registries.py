"""Which process exports which of Poolboy's metrics: one Prometheus registry per component that serves them.

Every Poolboy metric is declared into the registry of the component that records it (``registry=WORKER``), or into
both with :func:`shared`; none goes into prometheus_client's global registry. That one is what Flower's ``/metrics``
serves, and Flower's process imports the engine with the Celery app's tasks: every family declared there would show
on Flower's page (at zero, or as its HELP and TYPE lines alone). And a worker's processes write every family their
imports declared (the watcher's own-write check counter comes with the engine) into the files its endpoint sums, so
an endpoint serves only the families its component declares (:class:`Own`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

#: the families a worker records and serves: reconciles, the work queue's runs, the API requests and Events they make
WORKER = CollectorRegistry(auto_describe=True)
#: the families the watcher records and serves: watch streams, the events it hands the work queue, the pools' flow
WATCHER = CollectorRegistry(auto_describe=True)

M = TypeVar("M", bound=Collector)


def shared(metric: M, *components: CollectorRegistry) -> M:
    """``metric`` (declared with ``registry=None``) in each registry of ``components``: a family several record."""
    for component in components:
        component.register(metric)
    return metric


def family_names(component: CollectorRegistry) -> frozenset[str]:
    """The names of the families ``component`` declares, as a scrape names them (a counter's without ``_total``)."""
    return frozenset(family.name for family in component.collect())


class Own(Collector):
    """The families of ``source`` that ``component`` declares, read at each scrape: ``source`` is the sum over a
    worker's processes (prometheus_client's multiprocess collector), or by default ``component`` itself."""

    def __init__(self, component: CollectorRegistry, source: Collector | None = None) -> None:
        self.component = component
        self.source = source

    def collect(self) -> Iterator[Metric]:
        if self.source is None:
            yield from self.component.collect()
            return
        names = family_names(self.component)
        yield from (family for family in self.source.collect() if family.name in names)


def endpoint(*collectors: Collector, process: bool = True) -> CollectorRegistry:
    """The registry a component's /metrics serves: ``collectors`` and, with ``process``, the families of the
    process itself (CPU, memory, open files, the garbage collector, the Python version)."""
    served = CollectorRegistry()
    for collector in collectors:
        served.register(collector)
    if process:
        ProcessCollector(registry=served)
        PlatformCollector(registry=served)
        GCCollector(registry=served)
    return served

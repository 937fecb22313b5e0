"""Each kind is declared once (:data:`poolboy.kinds.DECLARED`), and what the watcher, the engine, the Celery adapter
and beat do with kinds follows from those declarations and agrees with the CRDs the chart installs."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml
from celery import Celery

from engine import sweeps
from poolboy import kinds
from poolboy.reconcilers import RECONCILERS
from poolboy.settings import Settings
from watcher import mapping
from workers import config, names

CRDS = Path(__file__).resolve().parents[2] / "helm" / "crds"
#: upstream's ResourceWatch is installed for compatibility: nothing reconciles it (docs/behaviour.md#resources)
NOT_RECONCILED = {"ResourceWatch"}
DECLARED = [pytest.param(kind, id=kind.token) for kind in kinds.DECLARED]


def crds() -> dict[str, dict]:
    found = (yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml")))
    return {crd["spec"]["names"]["kind"]: crd for crd in found}


def test_every_crd_but_the_compatibility_ones_is_a_declared_kind() -> None:
    assert set(crds()) - NOT_RECONCILED == set(kinds.BY_NAME)


@pytest.mark.parametrize("kind", DECLARED)
def test_a_declared_kind_matches_its_crd(kind: kinds.Kind) -> None:
    names_ = crds()[kind.name]["spec"]["names"]
    assert (names_["plural"], crds()[kind.name]["spec"]["scope"]) == (kind.plural, "Namespaced")


@pytest.mark.parametrize("kind", DECLARED)
def test_a_declared_kind_is_reconciled_by_its_module(kind: kinds.Kind) -> None:
    assert RECONCILERS[kind.token] is importlib.import_module(kind.reconciler).reconcile


@pytest.mark.parametrize("kind", DECLARED)
def test_a_declared_kind_is_watched_where_it_lives(kind: kinds.Kind) -> None:
    routes = [route for route in mapping.ROUTES if route.kind == kind.name]
    assert [route.all_namespaces for route in routes] == [kind.all_namespaces]
    settings = Settings()
    elsewhere = {"apiVersion": settings.api_version, "kind": kind.name,
                 "metadata": {"namespace": "users", "name": "x"}}
    woken = routes[0].keys(elsewhere, settings)
    assert woken == ([f"{kind.token}/users/x"] if kind.all_namespaces else [])


@pytest.mark.parametrize("kind", DECLARED)
def test_a_declared_kind_has_its_queue_and_task(kind: kinds.Kind) -> None:
    routes = config.build(Settings())["task_routes"]
    assert kind.queue in names.QUEUES
    assert routes[names.reconcile_task(kind.token)] == {"queue": kind.queue}
    assert names.route(f"{kind.token}/ns/x") == (names.reconcile_task(kind.token), kind.queue)


def test_the_worker_banner_names_each_queue_with_its_own_exchange_and_routing_key() -> None:
    """Celery's routing table, as a worker's start-up banner prints it: each queue's own route, not the default
    queue's for every one."""
    app = Celery(set_as_current=False)
    app.config_from_object(config.build(Settings()))
    banner = app.amqp.queues.format(indent_first=False).splitlines()
    assert sorted(line.split() for line in banner) == sorted(
        [".>", name, f"exchange={name}(direct)", f"key={name}"] for name in names.QUEUES)


def test_beat_sweeps_exactly_the_kinds_declared_with_an_interval() -> None:
    settings = Settings(manage_claims_interval=7, manage_handles_interval=8, manage_pools_interval=9)
    schedule = config.beat_schedule(settings)
    swept = {entry["task"]: entry["schedule"] for name, entry in schedule.items() if name != "resync"}
    assert swept == {names.manage_task(kind): getattr(settings, kind.sweep_interval)
                     for kind in kinds.DECLARED if kind.sweep_interval}
    assert set(swept) == {"poolboy.periodic.manage_claims", "poolboy.periodic.manage_handles",
                          "poolboy.periodic.manage_pools"}


def test_sweeps_skip_converged_objects_of_the_kinds_declared_so() -> None:
    declared = {kind.token for kind in kinds.DECLARED if kind.skip_converged}
    assert sweeps.FILTERED == declared == {"claim", "handle", "pool"}

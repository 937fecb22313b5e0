"""The reconcilers a worker runs (poolboy.reconcilers, engine.runtime.ProcessRuntime, ``poolboy worker --reconcilers``):
the domain's by default, each kind's module imported on its first lookup (which shows only in a fresh interpreter:
tests/integration/test_fresh_processes.py); any ``<module>:<attr>`` mapping instead (how the integration tests run
instrumented reconcilers in real workers)."""

import pytest

from poolboy import keys
from poolboy.reconcilers import RECONCILERS, preload
from stack.worker import resolve_reconcilers

#: an attribute that is not a mapping of reconcilers
NOT_A_MAPPING = "claim"

#: a stand-in mapping, named below as ``tests.unit.test_reconciler_registry:ALTERNATIVE``
ALTERNATIVE = {"claim": len}


class Broken(dict):
    """A mapping whose ``handle`` cannot be loaded, as a kind whose module fails to import."""

    def __getitem__(self, kind: str):  # type: ignore[no-untyped-def]
        if kind == "handle":
            raise ImportError("no module named 'broken'")
        return super().__getitem__(kind)


def test_the_domain_maps_every_kind() -> None:
    assert set(RECONCILERS) == set(keys.KINDS)
    assert all(callable(RECONCILERS[kind]) for kind in RECONCILERS)


def test_preload_reports_the_kinds_that_fail_and_loads_the_others() -> None:
    assert preload(RECONCILERS) == []
    assert preload(Broken(claim=len, handle=len)) == ["handle"]


def test_the_worker_resolves_a_named_mapping_once_at_start() -> None:
    assert resolve_reconcilers("tests.unit.test_reconciler_registry:ALTERNATIVE") is ALTERNATIVE


@pytest.mark.parametrize("target", ["tests.unit.no_such_module:RECONCILERS", "tests.unit.test_reconciler_registry:NONE",
                                    "tests.unit.test_reconciler_registry:NOT_A_MAPPING"])
def test_a_worker_told_to_run_reconcilers_that_are_not_there_does_not_start(target: str) -> None:
    with pytest.raises(SystemExit, match="--reconcilers"):
        resolve_reconcilers(target)

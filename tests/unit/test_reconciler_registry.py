"""The one registry of reconcilers (poolboy.reconcilers.registry): the domain's by default, any
``<module>:<attr>`` mapping instead (how the integration tests run instrumented reconcilers in real workers)."""

import pytest

from poolboy import keys
from poolboy.reconcilers import RECONCILERS, registry

#: a stand-in mapping, named below as ``tests.unit.test_reconciler_registry:ALTERNATIVE``
ALTERNATIVE = {"claim": len}


def test_the_default_registry_holds_every_kind() -> None:
    default = registry(None)
    assert default.reconcilers is RECONCILERS
    assert set(RECONCILERS) == set(keys.KINDS)
    assert default.lookup(keys.PROVIDER) is RECONCILERS[keys.PROVIDER]


def test_a_named_mapping_replaces_the_domain() -> None:
    alternative = registry("tests.unit.test_reconciler_registry:ALTERNATIVE")
    assert alternative.lookup("claim") is len
    with pytest.raises(LookupError):
        alternative.lookup("handle")
    assert alternative.preload() == []


def test_a_missing_module_fails_lookups_not_the_worker() -> None:
    broken = registry("tests.unit.no_such_module:RECONCILERS")
    assert broken.preload() == ["*"]
    with pytest.raises(LookupError):
        broken.lookup("claim")

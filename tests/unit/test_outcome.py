"""What a run came to, as the engine reads it from the domain's errors (pure: no Redis, no cluster)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from engine import runner
from engine.outcome import Refused, Succeeded
from poolboy.result import PermanentError, Result
from poolboy.settings import Settings
from workqueue.clock import FakeClock


def _runtime(**settings: Any) -> Any:
    return cast(Any, SimpleNamespace(settings=Settings(**settings), clock=FakeClock(now=1000.0)))


def test_a_permanent_error_without_an_interval_of_its_own_is_rechecked_at_the_operators() -> None:
    refused = runner._refused(_runtime(permanent_error_recheck=10), "handle", PermanentError("InvalidDefinition", "x"))
    assert isinstance(refused, Refused) and refused.recheck_after == 10
    assert refused.recheck_at == 1010.0, "on the runtime's clock"


def test_a_permanent_errors_own_interval_wins() -> None:
    refused = runner._refused(_runtime(permanent_error_recheck=10), "scaling", PermanentError("PoolNotFound", "x", 30))
    assert refused.recheck_after == 30


def test_a_success_names_its_deadline_and_the_keys_it_wakes() -> None:
    succeeded = runner._succeeded(Result(wake=("claim/ns/a",), hold=("pool/op/p",)))
    assert succeeded == Succeeded(None, ("claim/ns/a",), ("pool/op/p",)) and succeeded.result == "success"

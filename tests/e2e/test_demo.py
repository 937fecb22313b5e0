"""The README's promise: apply the examples, and `kubectl wait --for=condition=Ready` returns for the claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from stack.local import LocalStack
from tests.e2e.provider_support import kubectl
from tests.waiting import wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.kubectl
def test_examples_claim_becomes_ready_with_kubectl_wait(stack: LocalStack) -> None:
    applied = kubectl(stack, "apply", "-f", str(EXAMPLES))
    assert applied.returncode == 0, applied.stderr
    waited = kubectl(stack, "wait", "--for=condition=Ready", "--timeout=60s", "-n", "demo", "rclaim/hello")
    assert waited.returncode == 0, waited.stderr + "\n" + stack.logs()
    state = kubectl(stack, "get", "rclaim", "-n", "demo", "hello",
                    "-o", "jsonpath={.status.resources[0].state.data.greeting}")
    assert state.stdout == "hello"


@pytest.mark.kubectl
def test_pool_keeps_min_available_after_the_claim_binds(stack: LocalStack) -> None:
    kubectl(stack, "apply", "-f", str(EXAMPLES))

    def available() -> bool:
        out = kubectl(stack, "get", "resourcepool", "-n", "poolboy", "hello",
                      "-o", "jsonpath={.status.resourceHandleCount.available}").stdout
        return out.isdigit() and int(out) >= 2

    wait_for(available, timeout=60, message="pool hello to have 2 available handles")

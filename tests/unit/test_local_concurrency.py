"""How many reconciles at once each worker of `poolboy dev` runs when none is given: about two per core in all."""

from __future__ import annotations

import pytest

from stack.local import LocalStack, StackOptions
from stack.worker import DEFAULT_CONCURRENCY, local_concurrency


@pytest.mark.parametrize("workers, cores, expected", [
    (1, 2, 4), (2, 2, 2), (3, 2, 1), (8, 2, 1), (1, 1, 2), (2, 8, DEFAULT_CONCURRENCY), (16, 8, 1), (0, 2, 4),
])
def test_about_two_slots_per_core_at_most_the_default_each(workers: int, cores: int, expected: int) -> None:
    assert local_concurrency(workers, cores) == expected


def test_an_explicit_concurrency_wins() -> None:
    assert LocalStack(StackOptions(workers=8, concurrency=3)).concurrency == 3
    assert LocalStack(StackOptions(workers=8)).concurrency == local_concurrency(8)

"""How many reconciles at once each worker of `poolboy dev` runs when none is given: threads about four per core in
all and at least two per worker, prefork children about two per core in all."""

from __future__ import annotations

import pytest

from stack.local import LocalStack, StackOptions
from stack.worker import DEFAULT_CONCURRENCY, local_concurrency


@pytest.mark.parametrize("workers, cores, expected", [
    (1, 2, 4), (2, 2, 2), (3, 2, 1), (8, 2, 1), (1, 1, 2), (2, 8, DEFAULT_CONCURRENCY), (16, 8, 1), (0, 2, 4),
])
def test_prefork_about_two_slots_per_core_at_most_the_default_each(workers: int, cores: int, expected: int) -> None:
    assert local_concurrency(workers, cores, pool="prefork") == expected


@pytest.mark.parametrize("workers, cores, expected", [
    (1, 2, 4), (2, 2, 4), (3, 2, 2), (4, 2, 2), (8, 2, 2), (1, 1, 4), (2, 1, 2), (2, 8, DEFAULT_CONCURRENCY),
    (16, 8, 2), (4, 8, 4), (0, 2, 4),
])
def test_threads_about_four_per_core_at_least_two_per_worker(workers: int, cores: int, expected: int) -> None:
    """A lone thread idles while its worker acks and fetches messages and while the API answers."""
    assert local_concurrency(workers, cores, pool="threads") == expected
    assert local_concurrency(workers, cores) == expected  # threads are the default pool


def test_an_explicit_concurrency_wins() -> None:
    assert LocalStack(StackOptions(workers=8, concurrency=3)).concurrency == 3
    assert LocalStack(StackOptions(workers=8)).concurrency == 2
    assert LocalStack(StackOptions(workers=8, pool="prefork")).concurrency == 1

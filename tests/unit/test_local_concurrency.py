"""How many reconciles at once each worker of `poolboy dev` runs when none is given: threads the default each (they
mostly wait, and a thread slot costs next to nothing), prefork children about two per core in all."""

from __future__ import annotations

import pytest

from stack.local import LocalStack, StackOptions
from stack.worker import DEFAULT_CONCURRENCY, local_concurrency


@pytest.mark.parametrize("workers, cores, expected", [
    (1, 2, 4), (2, 2, 2), (3, 2, 1), (8, 2, 1), (1, 1, 2), (2, 8, DEFAULT_CONCURRENCY), (16, 8, 1), (0, 2, 4),
])
def test_prefork_about_two_slots_per_core_at_most_the_default_each(workers: int, cores: int, expected: int) -> None:
    assert local_concurrency(workers, cores, pool="prefork") == expected


@pytest.mark.parametrize("workers, cores", [(1, 2), (2, 2), (3, 2), (8, 2), (1, 1), (2, 1), (2, 8), (16, 8), (0, 2)])
def test_threads_the_default_each_whatever_the_workers(workers: int, cores: int) -> None:
    """A thread idles while its worker acks and fetches messages and while the API answers: with 8 workers on 2
    cores, four threads each bound W6 sooner than two (benchmarks/README.md)."""
    assert local_concurrency(workers, cores, pool="threads") == DEFAULT_CONCURRENCY
    assert local_concurrency(workers, cores) == DEFAULT_CONCURRENCY  # threads are the default pool


def test_an_explicit_concurrency_wins() -> None:
    assert LocalStack(StackOptions(workers=8, concurrency=3)).concurrency == 3
    assert LocalStack(StackOptions(workers=8)).concurrency == DEFAULT_CONCURRENCY
    assert LocalStack(StackOptions(workers=8, pool="prefork")).concurrency == 1

"""Where a worker imports the domain: before the pool forks (prefork: the children inherit it), or after the
consumer is ready (threads, gevent, solo: off the path to ready). How the worker's app reaches the runtime shows only
in a fresh interpreter: tests/integration/test_fresh_processes.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from celery.concurrency import prefork, solo, thread

from workers.app import _forks_children


@pytest.mark.parametrize("pool, forks", [
    ("prefork", True), ("processes", True), (prefork.TaskPool, True),
    ("threads", False), ("solo", False), ("gevent", False), (thread.TaskPool, False), (solo.TaskPool, False),
])
def test_only_a_prefork_pool_preloads_before_ready(pool: object, forks: bool) -> None:
    assert _forks_children(SimpleNamespace(pool_cls=pool)) is forks


def test_an_unknown_sender_is_not_prefork() -> None:
    assert _forks_children(None) is False

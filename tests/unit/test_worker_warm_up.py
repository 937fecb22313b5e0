"""Where a worker imports the domain: before the pool forks (prefork: the children inherit it), or after the
consumer is ready (threads, gevent, solo: off the path to ready); and how the worker's app reaches the runtime."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from celery.concurrency import prefork, solo, thread

from workers.app import _forks_children

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("pool, forks", [
    ("prefork", True), ("processes", True), (prefork.TaskPool, True),
    ("threads", False), ("solo", False), ("gevent", False), (thread.TaskPool, False), (solo.TaskPool, False),
])
def test_only_a_prefork_pool_preloads_before_ready(pool: object, forks: bool) -> None:
    assert _forks_children(SimpleNamespace(pool_cls=pool)) is forks


def test_an_unknown_sender_is_not_prefork() -> None:
    assert _forks_children(None) is False


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_engine_does_not_import_the_app_module() -> None:
    """The runtime and the enqueuer are given the app's publisher (ProcessRuntime, Enqueuer(queue, publisher)) and
    the tasks take the runtime from their own app: importing them does not import ``workers.app``."""
    result = _python("import sys, engine.runtime, engine.enqueue, workers.tasks, workers.beat; "
                     "print('workers.app' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_a_runtime_nobody_started_says_what_is_missing() -> None:
    result = _python("from workers.app import app; app.runtime")
    assert result.returncode != 0 and "the app's runtime was not started" in result.stderr


def test_the_worker_starts_the_runtime_on_its_app_when_it_starts() -> None:
    result = _python("from workers import app; from poolboy import reconcilers; "
                     "app._preload_reconcilers(None); rt = app.app.runtime; "
                     "print(rt.publisher.app is app.app, rt.settings is app.settings, "
                     "rt.reconcilers is reconcilers.RECONCILERS)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True True True"


def test_the_reconcilers_given_to_the_worker_are_the_ones_its_runtime_runs() -> None:
    """``poolboy worker --reconcilers`` hands the mapping to ``app.Worker``, which keeps it in its options."""
    result = _python("from types import SimpleNamespace; from workers import app; "
                     "given = {'claim': len}; "
                     "app._preload_reconcilers(SimpleNamespace(options={'reconcilers': given}, pool_cls='threads')); "
                     "print(app.app.runtime.reconcilers is given)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"

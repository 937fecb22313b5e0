"""What shows only in a process of its own: what a fresh interpreter imports (a worker, the watcher and beat each
start one, and every import costs each of them), how a worker's app reaches the engine's runtime, the memory a hostile
template costs, and the Event recorder a forked prefork child gets. Each test runs its code in a new Python
interpreter, or forks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from poolboy.kube import event_recorder
from poolboy.kube.events import event_body

ROOT = Path(__file__).resolve().parents[2]


def python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter in the repository."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def printed(code: str) -> str:
    """What ``code`` prints in a fresh interpreter, which must end well."""
    result = python(code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# --- imports ---------------------------------------------------------------------------------------------------------

def test_the_domain_imports_a_kind_only_when_it_is_looked_up() -> None:
    assert printed("import sys; from poolboy.reconcilers import RECONCILERS; "
                   "before = 'poolboy.reconcilers.claim' in sys.modules; RECONCILERS['claim']; "
                   "print(before, 'poolboy.reconcilers.claim' in sys.modules)") == "False True"


def test_importing_the_schema_module_builds_no_grammar() -> None:
    """A format library that builds a parser at import (rfc3987-syntax's Lark grammar took 1.5 s) would be paid by
    every process for a format (``iri``) that draft 4 does not have."""
    assert printed("import sys, poolboy.utils.schema; "
                   "print(sorted(m for m in ('lark', 'rfc3987_syntax') if m in sys.modules))") == "[]"


def test_the_engine_does_not_import_the_app_module() -> None:
    """The runtime and the enqueuer are given the app's publisher (ProcessRuntime, Enqueuer(queue, publisher)) and
    the tasks take the runtime from their own app: importing them does not import ``workers.app``."""
    assert printed("import sys, engine.runtime, engine.enqueue, workers.tasks, workers.beat; "
                   "print('workers.app' in sys.modules)") == "False"


# --- the worker's runtime ----------------------------------------------------------------------------------------

def test_a_runtime_nobody_started_says_what_is_missing() -> None:
    result = python("from workers.app import app; app.runtime")
    assert result.returncode != 0 and "the app's runtime was not started" in result.stderr


def test_the_worker_starts_the_runtime_on_its_app_when_it_starts() -> None:
    assert printed("from workers import app; from poolboy import reconcilers; "
                   "app._preload_reconcilers(None); rt = app.app.runtime; "
                   "print(rt.publisher.app is app.app, rt.settings is app.settings, "
                   "rt.reconcilers is reconcilers.RECONCILERS)") == "True True True"


def test_the_reconcilers_given_to_the_worker_are_the_ones_its_runtime_runs() -> None:
    """``poolboy worker --reconcilers`` hands the mapping to ``app.Worker``, which keeps it in its options."""
    assert printed("from types import SimpleNamespace; from workers import app; "
                   "given = {'claim': len}; "
                   "app._preload_reconcilers(SimpleNamespace(options={'reconcilers': given}, pool_cls='threads')); "
                   "print(app.app.runtime.reconcilers is given)") == "True"


# --- hostile templates -------------------------------------------------------------------------------------------

def test_amplifier_neither_stalls_nor_grows_the_process() -> None:
    """The reported case, measured in a fresh interpreter: refused within the run's timeout and with little memory
    (it used 3.8 GB)."""
    grown_kib = int(printed(textwrap.dedent(
        """
        import resource
        from poolboy.utils.templating import TemplateError, render_string
        render_string("{{ 1 }}", {})
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for source in (
            "{{ ('a\\\\n' * 200000) | indent(10000) | length }}",
            "{{ ([1] * 100000) | join('x' * 1000000) | length }}",
        ):
            try:
                render_string(source, {})
            except TemplateError:
                pass
            else:
                raise SystemExit("not refused: " + source)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
        """
    )))
    assert grown_kib < 64 * 1024, f"the process grew by {grown_kib} KiB"


# --- a forked child ----------------------------------------------------------------------------------------------

class AcceptingSink:
    """An Event sink that takes every request."""

    def __init__(self) -> None:
        self.requests = 0

    def create(self, body: dict) -> dict:
        self.requests += 1
        return {}

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict) -> dict:
        self.requests += 1
        return {}


def test_a_forked_child_gets_its_own_recorder() -> None:
    parent = event_recorder.recorder()
    sink = AcceptingSink()
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns", "uid": "u"}}
    event_recorder.record(sink, event_body(obj, "Fork", "before", default_namespace="op"))
    assert event_recorder.flush(10) and sink.requests
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave at once
        child = event_recorder.recorder()
        ok = child is not parent and child.pid == os.getpid() and child._threads == [] and child.pending() == 0
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    os.close(read)
    assert answer == b"1"
    assert event_recorder.recorder() is parent

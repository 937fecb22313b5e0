"""Components forked from the stack's fork server (``stack/forked.py``, ``stack/zygote.py``) look and behave as the
subprocesses they replace: real ``poolboy worker`` processes on a real Redis.

What people and tools rely on: a component is a direct child of the process that runs the stack (``poolboy dev``),
with the command line ``python -m stack.cli <argv>`` and the process name ``python``, in a session of its own; its
exit status and its last words reach the stack; it dies with the stack; and the fork server's own death takes no
component with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from stack import forked
from stack.processes import ROOT, Child
from tests.integration.engine_settings import ENV
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


def worker_argv(name: str) -> list[str]:
    return ["worker", "--queues", "claims", "--concurrency", "1", "--pool", "threads", "--hostname", f"{name}@%h"]


def component_env(redis_url: str) -> dict[str, str]:
    return {**os.environ, **ENV, "POOLBOY_REDIS_URL": redis_url, "POOLBOY_METRICS_PORT": "0",
            "POOLBOY_HEALTH_PORT": "0"}


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody reaped yet."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_forked_worker_is_a_child_of_the_stack_with_its_command_line_session_and_exit_status(redis_server,
                                                                                             tmp_path):
    argv = worker_argv("forked")
    child = Child("worker-0", argv, component_env(redis_server.url), tmp_path).start()
    try:
        assert isinstance(child.process, forked.ForkedProcess)
        wait_for(lambda: "ready." in child.output(), 30, message=f"worker ready\n{child.tail()}")
        process = psutil.Process(child.pid)
        assert process.ppid() == os.getpid()
        assert process.cmdline() == [sys.executable, "-m", "stack.cli", *argv]
        assert process.name() == Path(sys.executable).name[:15]
        assert os.getpgid(child.pid) == child.pid  # its own session: stopped as a group
        assert child.alive and child.process.poll() is None
        os.kill(child.pid, signal.SIGKILL)
        wait_for(lambda: not child.alive, 10, message="the killed worker seen as exited")
        assert child.process.returncode == -signal.SIGKILL
    finally:
        child.stop()


def test_a_component_that_fails_reports_its_exit_status_and_last_words(tmp_path):
    child = Child("bad", ["worker", "--pool", "no-such-pool"], dict(os.environ), tmp_path).start()
    assert child.process is not None
    assert child.process.wait(30) == 2  # argparse's usage error
    assert any("invalid choice" in line for line in child.last_lines()), child.tail()


def test_the_fork_server_dying_takes_no_component_with_it_and_is_started_again(redis_server, tmp_path):
    env = component_env(redis_server.url)
    first = Child("worker-a", worker_argv("survivor"), env, tmp_path).start()
    try:
        wait_for(lambda: "ready." in first.output(), 30, message=f"worker ready\n{first.tail()}")
        server = forked.zygote().process
        server.kill()
        server.wait(10)
        second = Child("worker-b", worker_argv("after"), env, tmp_path).start()
        try:
            wait_for(lambda: "ready." in second.output(), 30, message=f"second worker ready\n{second.tail()}")
            assert forked.zygote().process.pid != server.pid
            assert first.alive, first.tail()
        finally:
            second.stop()
    finally:
        first.stop()


def test_components_stop_when_the_stack_process_is_killed(redis_server, tmp_path):
    """A process that runs a forked worker (as ``poolboy dev`` does) is SIGKILLed: the worker goes too."""
    script = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from stack.processes import Child
        child = Child("worker-0", {worker_argv("orphan")!r}, dict(os.environ), Path({str(tmp_path)!r})).start()
        print(child.pid, flush=True)
        time.sleep(600)
    """)
    stack = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=component_env(redis_server.url),
                             stdout=subprocess.PIPE, text=True)
    try:
        assert stack.stdout is not None
        pid = int(stack.stdout.readline())
        wait_for(lambda: "ready." in (tmp_path / "worker-0.log").read_text(), 30, message="worker ready")
        assert psutil.Process(pid).ppid() == stack.pid
        stack.kill()
        stack.wait(10)
        wait_for(lambda: gone(pid), 30, message="the worker exited after its stack was killed")
    finally:
        stack.kill()


def test_workers_on_monkey_patching_pools_are_not_forked():
    assert forked.forkable(["worker", "--pool", "threads"])
    assert forked.forkable(["watcher", "--identity", "x"])
    assert not forked.forkable(["worker", "--pool", "gevent"])
    assert not forked.forkable(["worker", "-P", "eventlet"])


def test_the_preload_list_leaves_settings_read_at_import_to_each_component():
    """prometheus_client picks its multiprocess mode from the environment at import: it must not be preloaded, nor
    any module of the engine that defines metrics. The pure domain is preloaded whole."""
    code = ("import sys; from stack import preload; preload.load(); print('prometheus_client' in sys.modules, "
            "any(m.split('.')[0] in ('workers', 'watcher', 'cache') for m in sys.modules), "
            "all(m in sys.modules for m in ('poolboy.reconcilers.claim', 'poolboy.utils.templating')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False", "True"]


def test_importing_the_preloaded_domain_reads_no_environment_variable():
    """A setting read at import would be the fork server's, not the component's (whose environment is set after the
    fork): every module of the preloaded packages must read its settings when it runs, not when it is imported."""
    code = textwrap.dedent("""
        import importlib, os, sys
        from stack import preload
        for name in preload.MODULES:
            importlib.import_module(name)
        read = []

        class Recording(dict):
            def __getitem__(self, key):
                read.append(key)
                return super().__getitem__(key)

            def get(self, key, default=None):
                read.append(key)
                return super().get(key, default)

            def __contains__(self, key):
                read.append(key)
                return super().__contains__(key)

        os.environ = Recording(os.environ)
        fresh = [name for package in preload.PACKAGES for name in preload.package_modules(package)]
        for name in fresh:
            importlib.import_module(name)
        print(len(fresh), sorted(set(read)))
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    count, read = result.stdout.split(" ", 1)
    assert int(count) > 50 and read.strip() == "[]", result.stdout


def test_a_request_the_fork_server_cannot_serve_is_answered_with_an_error_and_the_server_goes_on(redis_server,
                                                                                                   tmp_path):
    server = forked.zygote()
    with server._lock:
        server._requests.write(b"not json\n")
        server._requests.flush()
        reply = json.loads(server._replies.readline())
    assert "error" in reply and "pid" not in reply
    child = Child("worker-0", worker_argv("after-error"), component_env(redis_server.url), tmp_path).start()
    try:
        wait_for(lambda: "ready." in child.output(), 30, message=f"worker ready\n{child.tail()}")
        assert forked.zygote() is server and server.alive
    finally:
        child.stop()

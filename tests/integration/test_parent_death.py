"""A child tied to its parent by PR_SET_PDEATHSIG dies with the *thread* that forked it, not the process: children
that :mod:`procutil` starts are forked from one long-lived thread, so a component a supervisor restarts from a
short-lived thread (a request handler) lives on after that thread ends."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading

from procutil import ChildProcess, die_with_parent

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def started_from_a_thread_that_ends(start):
    """What ``start()`` returns, called from a thread that has ended once this returns."""
    box = []
    thread = threading.Thread(target=lambda: box.append(start()))
    thread.start()
    thread.join()
    return box[0]


def test_a_plain_child_dies_when_the_thread_that_forked_it_ends():
    """The kernel's rule, which the next test guards against: this is what killed a restarted API server."""
    process = started_from_a_thread_that_ends(
        lambda: subprocess.Popen(SLEEPER, preexec_fn=die_with_parent, start_new_session=True))
    try:
        assert process.wait(timeout=10) == -signal.SIGTERM
    finally:
        process.kill()


def test_a_child_process_outlives_the_short_lived_thread_that_started_it(tmp_path):
    child = started_from_a_thread_that_ends(lambda: ChildProcess(SLEEPER, tmp_path / "sleeper.log").start())
    try:
        # the plain child above is dead well within this window
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.process.wait(timeout=2)
        assert child.alive, f"the child died with the thread that asked for it (exit {child.process.returncode})"
    finally:
        child.stop()

"""A component in the fork server's child (:mod:`stack.zygote`): become ``python -m stack.cli <argv>``, then run it.

What a process of its own would have got from ``subprocess.Popen`` and the interpreter: a session of its own (the
stack stops it as a group), stdin on ``/dev/null``, stdout and stderr appended to its log and written through (as
``PYTHONUNBUFFERED``), its environment, working directory, ``sys.argv`` and command line (``ps``, ``pgrep -f``), and
the exit handlers of a normal interpreter exit. In place of ``PR_SET_PDEATHSIG`` it stops when the stack dies
(:func:`stop_with_stack`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import sys
import threading
from typing import Any


def run(request: dict[str, Any], lifeline_fd: int) -> int:
    argv: list[str] = list(request["argv"])
    cwd: str = request["cwd"]
    os.setsid()
    _redirect(request["log"])
    _set_title(" ".join(request["cmdline"]))  # before the environment changes: it measures the space it may use
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(cwd)
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    sys.argv = [os.path.join(cwd, "stack", "cli.py"), *argv]
    threading.Thread(target=stop_with_stack, args=(lifeline_fd,), name="stack-lifeline", daemon=True).start()
    from stack.cli import main

    try:
        return main(argv)
    finally:
        atexit._run_exitfuncs()  # the child leaves through os._exit, which skips them
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()


def _redirect(log_path: str) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(line_buffering=True, write_through=True)  # type: ignore[union-attr]


def _set_title(title: str) -> None:
    """The command line ``ps`` and ``pgrep -f`` show: the one the component would have as a process of its own."""
    import setproctitle

    setproctitle.setproctitle(title)


def stop_with_stack(lifeline_fd: int) -> None:
    """SIGTERM this component once the lifeline hangs up: the stack, its only writer, exited or was killed. Only a
    hang-up is waited for (never data, which is the fork server's to read)."""
    poller = select.poll()
    poller.register(lifeline_fd, select.POLLHUP)
    while not any(event & (select.POLLHUP | select.POLLERR) for _, event in poller.poll()):
        pass
    os.kill(os.getpid(), signal.SIGTERM)

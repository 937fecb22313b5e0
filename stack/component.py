"""A component in the fork server's child (:mod:`stack.zygote`): become ``python -m stack.cli <argv>``, then run it.

What a process of its own would have got from ``subprocess.Popen`` and the interpreter: a session of its own (the
stack stops it as a group), stdin on ``/dev/null``, stdout and stderr appended to its log and written through (as
``PYTHONUNBUFFERED``), its environment, working directory, ``sys.argv`` and command line (``ps``, ``pgrep -f``), and
the exit handlers of a normal interpreter exit; and, once the stack has adopted it, SIGTERM when the stack dies
(``PR_SET_PDEATHSIG``, as :func:`procutil.die_with_parent` gives a subprocess).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
from typing import Any

from procutil import PR_SET_NAME, die_with_parent, prctl


def run(request: dict[str, Any]) -> int:
    argv: list[str] = list(request["argv"])
    cwd: str = request["cwd"]
    _tie_to(int(request["parent"]))
    os.setsid()
    _redirect(request["log"])
    _set_title(" ".join(request["cmdline"]))  # before the environment changes: it measures the space it may use
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(cwd)
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    sys.argv = [os.path.join(cwd, "stack", "cli.py"), *argv]
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
    """The command line ``ps`` and ``pgrep -f`` show: the one the component would have as a process of its own. It
    stays so: Celery would retitle worker and beat processes now that ``setproctitle`` is installed, and people and
    tools find the components by their command lines."""
    import celery.platforms
    import setproctitle

    with open("/proc/self/comm", "rb") as comm:
        name = comm.read().strip()  # "python", as for a subprocess; setproctitle would set it from the title
    setproctitle.setproctitle(title)
    prctl(PR_SET_NAME, name)
    celery.platforms._setproctitle = None


def _tie_to(stack_pid: int, timeout: float = 5.0) -> None:
    """Wait to be the stack's child (the fork server's middle child exits right after forking this one), then take
    SIGTERM when the stack dies; exit at once if the stack is already gone."""
    deadline = time.monotonic() + timeout
    while os.getppid() != stack_pid and time.monotonic() < deadline:
        time.sleep(0.001)
    die_with_parent()
    if os.getppid() != stack_pid:
        os._exit(1)

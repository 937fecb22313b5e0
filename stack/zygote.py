"""The stack's fork server: a process that has imported the components' libraries once and forks each component.

Runs as ``python -m stack.zygote``, started by :mod:`stack.forked`, which speaks to it over its stdin and stdout in
JSON lines: the stack asks ``{"argv": [...], "cmdline": [...], "env": {...}, "cwd": "...", "log": "...",
"parent": <the stack's pid>}`` and the server answers ``{"pid": N}`` once ``poolboy <argv>`` runs as process N, or
``{"error": "..."}`` when it could not fork it.

The component is forked twice (a child that forks it and exits at once), so that it is handed to the stack, which
marks itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): the component ends up a direct child of the stack, as a
subprocess would be. The stack reaps it and learns its exit status with ``waitpid``, tools that look for the
components among the children of ``poolboy dev`` find them there, and the component ties its life to the stack's
with ``PR_SET_PDEATHSIG`` once it is the stack's child (:func:`stack.component.run`). The server is single-threaded,
so forking it is safe.

Why not :mod:`multiprocessing.forkserver`: its children first re-run the parent's ``__main__`` module (spawn's
"main fix-up"), i.e. the benchmark's or the test runner's script, in every component, and stay the server's
children; a component must be exactly ``poolboy <argv>``, a child of the stack.
"""

from __future__ import annotations

import json
import os
import signal
import sys


def _say(message: dict[str, object]) -> None:
    """One JSON line on stdout, unbuffered (a forked child must not inherit half a reply in a buffer)."""
    os.write(1, json.dumps(message).encode() + b"\n")


def _fork(request: dict[str, object]) -> int:
    """Fork the component through a child that exits at once (so the stack, a subreaper, adopts it); its pid."""
    pid_r, pid_w = os.pipe()
    try:
        middle = os.fork()
    except OSError:
        os.close(pid_r)
        os.close(pid_w)
        raise
    if middle == 0:
        os.close(pid_r)
        try:
            component = os.fork()
            if component == 0:
                os.close(pid_w)
                _become(request)
            os.write(pid_w, str(component).encode())
        finally:
            os._exit(0)
    os.close(pid_w)
    with os.fdopen(pid_r, "rb") as reply:
        component = int(reply.read() or b"0")
    os.waitpid(middle, 0)  # once it is gone, the component has been handed to the stack
    if component <= 0:
        raise OSError("the component could not be forked")
    return component


def _become(request: dict[str, object]) -> None:
    """In the component: run ``poolboy <argv>`` and leave with its exit code, never returning into the server."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from stack.component import run

        code = run(request)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # a component's crash must end the child, never return into the server
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def serve() -> None:
    from stack import preload

    preload.load()  # the point of this process

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C in a terminal is the stack's to handle
    requests = os.fdopen(0, "rb")
    for line in requests:
        try:
            _say({"pid": _fork(json.loads(line))})
        except (OSError, ValueError) as error:  # e.g. fork's EAGAIN: the stack reports it, this server goes on
            _say({"error": f"{type(error).__name__}: {error}"})


if __name__ == "__main__":
    serve()
    sys.exit(0)

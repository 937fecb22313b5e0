"""The stack's fork server: a process that has imported the components' libraries once and forks each component.

Runs as ``python -m stack.zygote``, started by :mod:`stack.forked`, which speaks to it over its stdin and stdout in
JSON lines:

- the stack asks ``{"argv": [...], "cmdline": [...], "env": {...}, "cwd": "...", "log": "..."}`` and the server
  answers ``{"pid": N}`` once it has forked ``poolboy <argv>``;
- whenever a component exits, the server says ``{"exit": N, "code": C}`` (C as :attr:`subprocess.Popen.returncode`:
  the exit status, or minus the signal that killed it).

Why not :mod:`multiprocessing.forkserver`: its children first re-run the parent's ``__main__`` module (spawn's
"main fix-up"), i.e. the benchmark's or the test runner's script, in every component; a component must be exactly
``poolboy <argv>``. The server is single-threaded, so forking it is safe. Its stdin doubles as the components'
lifeline: only the stack writes to it, so when the stack dies every component sees the pipe hang up and stops
(:func:`stack.component.stop_with_stack`), while the death of this server alone takes no component with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import sys

#: the component's copy of this server's stdin (the stack's end is the only writer): it hangs up when the stack dies
LIFELINE_FD = 3


def _say(message: dict[str, object]) -> None:
    """One JSON line on stdout, unbuffered (a forked child must not inherit half a reply in a buffer)."""
    os.write(1, json.dumps(message).encode() + b"\n")


def _exit_code(status: int) -> int:
    return os.waitstatus_to_exitcode(status)


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _say({"exit": pid, "code": _exit_code(status)})


def _fork(request: dict[str, object]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        os.dup2(0, LIFELINE_FD)
        os.closerange(LIFELINE_FD + 1, os.sysconf("SC_OPEN_MAX"))
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from stack.component import run

        code = run(request, LIFELINE_FD)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # a component's crash must end the child, never return into the server
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def serve() -> None:
    import stack.preload  # noqa: F401 - the point of this process

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C in a terminal is the stack's to handle
    requests = os.fdopen(0, "rb", buffering=0)
    selector = selectors.DefaultSelector()
    selector.register(wake_r, selectors.EVENT_READ)
    selector.register(0, selectors.EVENT_READ)
    pending = b""
    while True:
        for key, _ in selector.select():
            if key.fd == wake_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
                _reap()
                continue
            chunk = requests.read(65536)
            if not chunk:
                return  # the stack is gone
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                _say({"pid": _fork(json.loads(line))})
        _reap()


if __name__ == "__main__":
    serve()
    sys.exit(0)

"""Graceful worker shutdown: running reconciles finish within a grace period, or are handed back at once.

Celery's warm shutdown (SIGTERM to the worker) stops consuming, gives prefetched messages back to the broker and
waits for running tasks — however long they take, until the pod's grace period ends in a SIGKILL. Then the killed
runs' work queue leases stay until they expire and the lease reaper re-publishes them, a lease period later. Here:

* the worker parent, when told to stop, passes SIGTERM on to its busy pool children (Kubernetes signals only PID 1;
  ``kill`` of the whole process group reaches them directly — both paths end the same way);
* a pool child that gets SIGTERM while a reconcile runs starts a timer of ``POOLBOY_WORKER_SHUTDOWN_GRACE``
  seconds; a reconcile still running when it fires is interrupted with :class:`HandBack`, raised only inside
  :func:`interruptible` (around the domain reconciler, never inside the work queue's own calls);
* the task catches it, marks its key pending while it still holds the lease, and DONE re-publishes the key and
  releases the lease: another worker runs it at once. Reconcilers are level-based and idempotent, so stopping one
  midway is as safe as a crash, minus the wait.

An idle child ignores SIGTERM: the parent ends the pool in its own time.

Under the threads (and gevent) pool the reconciles run in the worker process itself, where no signal can reach
them: when the worker starts shutting down, every running reconcile's :class:`poolboy.utils.cancellation.Scope` is
asked to stop after the grace, and its next stop point (an API request, a template render) raises
:class:`HandBack` — cooperative, so a run blocked in one long call is handed back when that call returns. The same
scope carries the soft time limit for every pool (Celery enforces its time limits only in prefork children).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from poolboy.utils import cancellation

log = logging.getLogger(__name__)

#: the signal the grace timer sends to the child's main thread
HAND_BACK_SIGNAL = signal.SIGUSR2


class HandBack(BaseException):
    """The worker is stopping and the grace period is over: give the running key back to the work queue.

    A BaseException so that a reconciler's ``except Exception`` cannot swallow it.
    """


class _ChildState:
    def __init__(self) -> None:
        self.child = False  # a prefork pool child (set by worker_process_init)
        self.installed = False
        self.previous: Any = signal.SIG_DFL  # billiard's SIGTERM handler, for an idle child
        self.running = False
        self.timer: threading.Timer | None = None
        self.grace = 20.0
        self.terminating = False  # SIGTERM came


_state = _ChildState()


class _InProcessRuns:
    """The scopes of the reconciles running in this process, for a shutdown of the threads or gevent pool."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scopes: set[cancellation.Scope] = set()
        self.stop_at: float | None = None  # monotonic time the grace ends, once the worker is stopping

    def add(self, scope: cancellation.Scope) -> None:
        with self.lock:
            self.scopes.add(scope)
            if self.stop_at is not None:  # started after the worker began stopping: same end of grace
                scope.stop_after(self.stop_at - time.monotonic(), HandBack)

    def discard(self, scope: cancellation.Scope) -> None:
        with self.lock:
            self.scopes.discard(scope)

    def stop_after(self, grace: float) -> int:
        with self.lock:
            self.stop_at = time.monotonic() + grace
            for scope in self.scopes:
                scope.stop_after(grace, HandBack)
            return len(self.scopes)


_runs = _InProcessRuns()


@contextmanager
def interruptible(soft_limit: float | None = None) -> Iterator[None]:
    """The part of a task that :class:`HandBack` may interrupt, run in its own cancellation scope (which also ends
    it with :class:`poolboy.utils.cancellation.RunTimeLimitExceeded` after ``soft_limit`` seconds)."""
    if _state.child and not _state.installed:
        _install()
    _state.running = True
    with cancellation.scope(soft_limit) as scope:
        _runs.add(scope)
        try:
            yield
        finally:
            _runs.discard(scope)
            _state.running = False
            if _state.timer is not None:  # finished within the grace: the timer must not hit a later run
                _state.timer.cancel()
                _state.timer = None


def stopping() -> bool:
    """The worker is stopping (a task then takes on no more runs of its own accord)."""
    return _runs.stop_at is not None or _state.terminating


def stop_in_process_runs(grace: float) -> None:
    """The worker (threads or gevent pool) is stopping: reconciles still running after ``grace`` seconds are handed
    back at their next stop point, and so is any that starts meanwhile."""
    running = _runs.stop_after(max(0.0, grace))
    if running:
        log.warning("worker stopping: %d running reconcile(s) have %.0fs to finish before they are handed back",
                    running, grace)


def _on_hand_back(signum: int, frame: object) -> None:
    if _state.running:
        _state.running = False  # once: the task's clean-up must not be interrupted again
        raise HandBack()


def _on_term(signum: int, frame: object) -> None:
    _state.terminating = True
    if not _state.running:
        if callable(_state.previous):  # idle: stop as a pool child always did
            _state.previous(signum, frame)
        return
    if _state.timer is not None:
        return
    log.warning("worker stopping: the running reconcile has %.0fs to finish before it is handed back", _state.grace)
    main = threading.main_thread().ident
    assert main is not None
    _state.timer = threading.Timer(_state.grace, signal.pthread_kill, (main, HAND_BACK_SIGNAL))
    _state.timer.daemon = True
    _state.timer.start()


def mark_pool_child(grace: float) -> None:
    """In each prefork pool child (``worker_process_init``). The handlers themselves are installed by the first
    task: billiard resets SIGTERM to its own handler after the process initializer has run."""
    _state.child = True
    _state.grace = max(0.0, grace)


def _install() -> None:
    _state.previous = signal.getsignal(signal.SIGTERM)
    signal.signal(HAND_BACK_SIGNAL, _on_hand_back)
    signal.signal(signal.SIGTERM, _on_term)
    _state.installed = True


def forward_to_busy_children(pids: Iterable[int]) -> None:
    """In the worker parent, when it starts shutting down: pass SIGTERM on to the pool children running a task,
    ``pids`` (the pool names them; idle ones are ended by the pool as usual)."""
    for pid in set(pids) - {os.getpid()}:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)

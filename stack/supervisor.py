"""``poolboy dev`` restarts a component that exited, with backoff, and says which one and why.

In a cluster, kubelet restarts a container that exits; on one machine nothing would, and a worker gone for good
silently halves the capacity of a two-worker stack. The supervisor is polled from ``poolboy dev``'s main loop
(:meth:`Supervisor.check`, about once a second) rather than running a thread of its own, so it never races the
loop's shutdown. The delay before restart *n* doubles from 1 s to 30 s (:func:`poolboy.utils.backoff.doubling`), so a
component that cannot start (a bad setting, a port in use) does not restart in a hot loop; a component that stayed up
for ``stable`` seconds starts again from 1 s. Redis, when ``poolboy dev`` started it, is supervised too: it comes
back on the same port (empty: it runs without persistence, as in the tests). So are the processes of the real control
plane (``--cluster real``): etcd, kube-apiserver and kube-controller-manager come back on their ports, etcd with its
data; and Prometheus, with its series.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from poolboy.utils.backoff import doubling

if TYPE_CHECKING:
    from procutil import ChildProcess
    from stack.local import LocalStack



def default_wait(restart: int) -> float:
    """Restart n waits min(30, 2^(n-1)) seconds."""
    return doubling(restart, base=1.0, cap=30.0)


@dataclass
class Supervised:
    """One component as the supervisor sees it: is it alive, why did it stop, start it again."""

    name: str
    alive: Callable[[], bool]
    why: Callable[[], str]
    restart: Callable[[], Any]
    #: what it said last (its log's last lines), shown under the announcement
    last_words: Callable[[], list[str]] = list


@dataclass
class _State:
    restarts: int = 0
    started_at: float = 0.0
    due: float | None = None


class Supervisor:
    """``supervisor.check()`` once a second: dead components are announced once, then restarted when due."""

    def __init__(self, components: list[Supervised], wait: Callable[[int], float] = default_wait,
                 stable: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 say: Callable[[str], None] = lambda line: print(line, flush=True)) -> None:
        self.components = components
        self.wait, self.stable, self.clock, self.say = wait, stable, clock, say
        self._state = {c.name: _State(started_at=clock()) for c in components}

    def check(self) -> None:
        now = self.clock()
        for component in self.components:
            state = self._state[component.name]
            if component.alive():
                if state.restarts and now - state.started_at >= self.stable:
                    state.restarts = 0  # it stayed up: the next failure is a new story
                continue
            if state.due is None:
                delay = self.wait(state.restarts + 1)
                state.due = now + delay
                self.say(f"{component.name} exited ({component.why()}); restarting it in {delay:.0f}s"
                         + (f" (restart {state.restarts + 1})" if state.restarts else ""))
                for line in component.last_words():
                    self.say(f"  | {line}")
            elif now >= state.due:
                component.restart()
                state.restarts += 1
                state.started_at, state.due = now, None

    @classmethod
    def for_stack(cls, stack: LocalStack, **kwargs: Any) -> Supervisor:
        """Every child of the stack and, when the stack started them, its redis-server and the processes of its real
        control plane."""
        components = [_child(stack, child.name) for child in stack.children]
        if stack.redis is not None:
            components.insert(0, _redis(stack))
        if stack.prometheus is not None:
            prometheus = stack.prometheus
            components.append(_process("prometheus", lambda: prometheus, prometheus.start))
        processes = getattr(stack.cluster, "processes", None)  # the real control plane's (devcluster has none)
        if processes is not None:
            components[:0] = [_process(name, now, start) for name, now, start in processes()]
        return cls(components, **kwargs)


def last_line(text: str) -> str:
    """The last non-blank line of a log, shortened: what a component said before it went."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1][:200] if lines else "no output")


def _child(stack: LocalStack, name: str) -> Supervised:
    """A child is looked up by name on every check: a restart replaces the stack's Child object."""

    def why() -> str:
        child = stack.child(name)
        status = child.process.returncode if child.process is not None else None
        return f"status {status}, last log line: {last_line(child.tail())}"

    return Supervised(name, lambda: stack.child(name).alive, why,
                      lambda: stack.restart(name, sig=signal.SIGKILL),  # SIGKILL: leftovers of the process group
                      last_words=lambda: stack.child(name).last_lines(20))


def _redis(stack: LocalStack) -> Supervised:
    server = stack.redis
    assert server is not None

    def alive() -> bool:
        return server.process is not None and server.process.poll() is None

    def why() -> str:
        status = server.process.returncode if server.process is not None else None
        log = Path(server._tmp.name) / "redis.log"
        return f"status {status}, last log line: {last_line(log.read_text(errors='replace') if log.exists() else '')}"

    return Supervised("redis-server", alive, why, server.start)


def _process(name: str, now: Callable[[], ChildProcess | None], start: Callable[[], Any]) -> Supervised:
    """A process of the real control plane, looked up on every check: a restart replaces it."""

    def alive() -> bool:
        child = now()
        return child is not None and child.alive

    def why() -> str:
        child = now()
        status = child.process.returncode if child is not None and child.process is not None else None
        return f"status {status}, last log line: {last_line(child.tail() if child is not None else '')}"

    def last_words() -> list[str]:
        child = now()
        return child.last_lines(20) if child is not None else []

    def restart() -> None:
        # returns once the process is ready again; if it died again while starting, the next check announces it
        # and waits longer
        with contextlib.suppress(RuntimeError):
            start()

    return Supervised(name, alive, why, restart, last_words=last_words)

"""Drive domain reconcilers directly against devcluster, without Celery, until nothing is left to do.

This is the deterministic harness for domain integration tests: it calls ``RECONCILERS[kind](ctx, ns, name)``
for a key, follows the keys each result enqueues, and stops when the work set is empty. The full distributed
stack (watcher, work queue, workers) is exercised separately in ``tests/e2e``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from poolboy import keys
from poolboy.context import Context, utcnow
from poolboy.reconcilers import RECONCILERS
from poolboy.result import PermanentError, Result
from poolboy.settings import Settings

if TYPE_CHECKING:
    from poolboy.kube import Client, KubeClient


def api_context(client: KubeClient, settings: Settings, *, kube: Client | None = None, **fields: Any) -> Context:
    """A context on the API client (no read-ahead): its Events and its discovery, its reads and writes unless
    ``kube`` is given."""
    return Context(kube=kube if kube is not None else client, events=client.events, mapper=client.discovery,
                   settings=settings, **fields)


class Converger:
    """``Converger(kube, settings).run("claim/ns/name")`` reconciles until quiescent; records every outcome."""

    def __init__(self, kube: KubeClient, settings: Settings, clock: Callable[[], datetime] = utcnow) -> None:
        self.kube = kube
        self.settings = settings
        self.clock = clock
        self.log: list[tuple[str, Result | PermanentError]] = []
        #: (the running key, the key it promised to wake) for every ``Context.will_wake``, in order
        self.promises: list[tuple[str, str]] = []

    def reconcile(self, key: str) -> Result | PermanentError:
        kind, namespace, name = keys.parse(key)
        ctx = api_context(self.kube, self.settings, now=self.clock(),
                          promiser=lambda promised: self.promises.append((key, promised)))
        try:
            outcome: Result | PermanentError = RECONCILERS[kind](ctx, namespace, name)
        except PermanentError as error:
            outcome = error
        self.log.append((key, outcome))
        return outcome

    def run(self, *start: str | Iterable[str], max_steps: int = 200) -> list[tuple[str, Result | PermanentError]]:
        queue: deque[str] = deque()
        for item in start:
            queue.extend([item] if isinstance(item, str) else item)
        steps = 0
        first = len(self.log)
        while queue:
            key = queue.popleft()
            outcome = self.reconcile(key)
            for other in outcome.wake:
                if other not in queue:
                    queue.append(other)
            steps += 1
            if steps >= max_steps:
                raise AssertionError(f"no convergence after {max_steps} reconciles; last: {self.log[-5:]}")
        return self.log[first:]

"""The operator's Celery app class: Celery's app, carrying the :class:`Settings` it was configured from and, once a
worker or beat starts on it, the runtime its tasks run with (:class:`engine.runtime.ProcessRuntime`), so that what
the worker runs (its tasks, its bootsteps such as :mod:`workers.pump`, beat's scheduler) takes both from the app it
is given rather than from a module's globals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from celery import Celery

from poolboy.settings import Settings

if TYPE_CHECKING:
    from engine.runtime import ProcessRuntime
    from poolboy.reconcilers import Reconciler


class OperatorApp(Celery):
    """``OperatorApp("poolboy", settings=settings)``: a Celery app and the operator's settings; its
    :attr:`runtime` once :meth:`start_runtime` was called."""

    def __init__(self, main: str | None = None, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(main, **kwargs)
        self.settings = settings
        self._runtime: ProcessRuntime | None = None

    def __reduce_keys__(self) -> dict[str, Any]:
        """What an unpickled copy is made from (Celery pickles an app for pools that do not fork): the settings too."""
        return {**super().__reduce_keys__(), "settings": self.settings}

    def start_runtime(self, reconcilers: Mapping[str, Reconciler] | None = None) -> ProcessRuntime:
        """The runtime of this process's tasks, running ``reconcilers`` (default: the domain's), publishing through
        this app: made once, when the worker or beat starts (the worker's before its pool forks: the children
        inherit it, and each builds its :class:`~engine.runtime.Runtime` on first use). The runtime's modules are
        imported here rather than with the app, which processes that run no task import too (Flower, the
        watcher)."""
        from engine.runtime import ProcessRuntime
        from poolboy.reconcilers import RECONCILERS
        from workers.messages import CeleryPublisher, QueuedMessages

        self._runtime = ProcessRuntime(CeleryPublisher(self), self.settings, QueuedMessages(self).encode,
                                       RECONCILERS if reconcilers is None else reconcilers)
        return self._runtime

    @property
    def runtime(self) -> ProcessRuntime:
        """The runtime :meth:`start_runtime` made; a task run before it says what is missing."""
        if self._runtime is None:
            raise RuntimeError("the app's runtime was not started: a worker's or beat's app starts it when the worker "
                               "or beat starts (OperatorApp.start_runtime, called by workers.app)")
        return self._runtime

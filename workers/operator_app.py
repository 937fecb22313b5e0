"""The operator's Celery app class: Celery's app, carrying the :class:`Settings` it was configured from, so that what
the worker runs (its bootsteps, :mod:`workers.pump`) reads them from the app it is given rather than from the module
that made the app (:mod:`workers.app`).
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from poolboy.settings import Settings


class OperatorApp(Celery):
    """``OperatorApp("poolboy", settings=settings)``: a Celery app and the operator's settings."""

    def __init__(self, main: str | None = None, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(main, **kwargs)
        self.settings = settings

    def __reduce_keys__(self) -> dict[str, Any]:
        """What an unpickled copy is made from (Celery pickles an app for pools that do not fork): the settings too."""
        return {**super().__reduce_keys__(), "settings": self.settings}

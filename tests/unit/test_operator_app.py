"""The operator's Celery app carries its settings to what the worker runs (pure: nothing connects)."""

from __future__ import annotations

import pickle
from types import SimpleNamespace
from typing import Any

from poolboy.settings import Settings
from workers.operator_app import OperatorApp
from workers.pump import PumpStep


def test_an_unpickled_app_keeps_its_settings() -> None:
    app = OperatorApp("test", settings=Settings(sweep_due_interval=0.7), set_as_current=False)
    assert pickle.loads(pickle.dumps(app)).settings == app.settings


def test_the_pump_runs_on_the_workers_app_at_its_interval() -> None:
    app = OperatorApp("test", settings=Settings(sweep_due_interval=0.7, sweep_due_batch=12), set_as_current=False)
    every: list[float] = []

    def call_repeatedly(interval: float, *_: Any, **__: Any) -> None:
        every.append(interval)

    worker = SimpleNamespace(app=app, timer=SimpleNamespace(call_repeatedly=call_repeatedly))
    step = PumpStep(worker)
    step.start(worker)
    assert every == [0.7]
    assert step.pump is not None and step.pump.batch == 12
    assert step.pump.enqueuer.publisher.app is app  # type: ignore[attr-defined]

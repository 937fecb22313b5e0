"""``poolboy.reconcile.<kind>``: one Celery task per kind, each a thin shell around :func:`engine.runner.execute`, run
with the runtime its app holds for this process (:attr:`workers.operator_app.OperatorApp.runtime`).

The task's message id is the work queue's message id (:mod:`engine.enqueue`), so the run's START can tell a
message the queue published from a copy of it.
"""

from __future__ import annotations

from celery import Task, shared_task

from engine.runner import execute
from poolboy.keys import KINDS
from workers.names import reconcile_task


def _make_task(kind: str) -> Task:
    def reconcile(self: Task, key: str) -> str:
        return execute(self.app.runtime.get(), self.request.id, kind, key)

    reconcile.__name__ = reconcile.__qualname__ = f"reconcile_{kind}"
    reconcile.__doc__ = f"Reconcile one {KINDS[kind]} through the work queue."
    # max_retries bounds worker-lost re-sends (task_retry_on_worker_lost); default_retry_delay is their countdown.
    return shared_task(name=reconcile_task(kind), bind=True, max_retries=5, default_retry_delay=2)(reconcile)


TASKS: dict[str, Task] = {kind: _make_task(kind) for kind in KINDS}

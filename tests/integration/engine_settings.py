"""How the engine tests configure the engine: the reconcilers workers run, worker/beat environment and the work queue
lease (shared by the ``test_engine*`` files and the ``enqueuer`` fixture, so publisher and workers agree on the
lease)."""

from __future__ import annotations

#: the instrumented reconcilers the engine tests' workers run (``WorkerProcess(..., reconcilers=RECONCILERS)``)
RECONCILERS = "tests.integration.engine_reconcilers:RECONCILERS"

#: work queue lease in seconds, short so that recovery after a dead worker is quick to observe
LEASE = 2.0

#: environment of the ``poolboy worker`` / ``poolboy beat`` subprocesses: a fast due sweep, and periodic jobs pushed
#: out of the way unless a test asks for them
ENV = {
    "POOLBOY_WORKQUEUE_LEASE_SECONDS": str(LEASE),
    "POOLBOY_SWEEP_DUE_INTERVAL": "0.5",
    "POOLBOY_MANAGE_CLAIMS_INTERVAL": "3600",
    "POOLBOY_MANAGE_HANDLES_INTERVAL": "3600",
    "POOLBOY_MANAGE_POOLS_INTERVAL": "3600",
    "POOLBOY_RESYNC_INTERVAL": "3600",
}

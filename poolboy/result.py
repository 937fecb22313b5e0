"""The reconcile contract shared by every domain reconciler and the engine that runs them.

Modelled on controller-runtime: ``reconcile(key) -> Result`` reads current state, converges, and says whether
it is done, wants to run again at a given time, or failed. Errors are split the way users experience them:
a :class:`PermanentError` is something the user must fix (it is written to status and re-checked slowly),
a :class:`TransientError` is the API or the network and is retried with backoff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from poolboy.utils.text import shorten


@dataclass(frozen=True)
class Result:
    """What a reconcile asks of the engine once it has converged as far as it can.

    ``requeue_at``: run this key again at that instant (a lifespan end, a start, a time-dependent template);
    the engine records it in the delaying queue, never as a Celery countdown.
    ``wake``: other keys whose reconcilers must look again (a handle change wakes its claim and pool),
    because an object's status has exactly one writer: its own reconciler.
    """

    requeue_at: datetime | None = None
    wake: tuple[str, ...] = field(default_factory=tuple)
    #: keys that must run soon but not necessarily at once (a pool after a bind): the engine holds each for a
    #: window and runs it once when the window ends, so a burst of binds costs the pool one run, not one per bind
    hold: tuple[str, ...] = field(default_factory=tuple)
    #: the window of ``hold``: None is ``Settings.hold_seconds``; 0 is the delaying queue's next tick, for a key
    #: whose status shows this object (a pool counts its handles' readiness) and must follow within a fraction of a
    #: second, while every change within one tick still costs one run
    hold_seconds: float | None = None

    @staticmethod
    def done(*wake: str) -> Result:
        return Result(wake=tuple(wake))


class PermanentError(Exception):
    """A user-fixable problem: bad spec, missing provider, invalid template, missing API.

    The reconciler has already written it to the object's status as a condition with ``reason`` and
    ``message`` and emitted an Event; the engine only re-checks it slowly (``recheck_after`` seconds; None: the
    operator's ``permanent_error_recheck``) or when the object or its provider changes. Never retried in a hot loop.
    """

    def __init__(self, reason: str, message: str, recheck_after: float | None = None,
                 wake: tuple[str, ...] = ()):
        message = shorten(message)  # one bounded text for the condition, the Event and the log, however long the input
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.recheck_after = recheck_after
        self.wake = wake


class TransientError(Exception):
    """The API server, the network or Redis failed; retry with backoff (``retry_after`` when the server said)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after

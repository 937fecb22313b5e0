"""Where a pool handle is in its life when its pool keeps handles on standby or its provider reuses them
(docs/pools.md, "Standby" and "Reuse"): the words, pure.

``status.state`` is written only for handles of a pool or provider that opts in, so a handle of any other pool
shows exactly what upstream Poolboy shows.

- ``Running``: its resources run; bound, or unbound and among the pool's ``standby.running``.
- ``Standby``: unbound, its resources put on standby by the standby patch.
- ``Resuming``: bound (or picked to run) while on standby; its resources are resuming, until ``resumedCheck``
  holds or ``resumeTimeout`` passes (then it is replaced).
- ``Cleaning``: released by its claim; its resources are being cleaned before it returns to its pool unbound,
  or is deleted when cleaning fails or takes longer than ``cleanupTimeout``. Never bound while cleaning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

RUNNING: Final = "Running"
STANDBY: Final = "Standby"
RESUMING: Final = "Resuming"
CLEANING: Final = "Cleaning"

STATES: Final = (RUNNING, STANDBY, RESUMING, CLEANING)

#: ``status.resumedAt``: when the handle last resumed from standby. Its Ready condition turned True then, not when
#: it was provisioned, so it is no measure of the pool's time to ready.
RESUMED_AT: Final = "resumedAt"


def state_of(handle: Mapping[str, Any]) -> str | None:
    """The handle's ``status.state``, or None for a handle whose pool and provider use neither standby nor reuse."""
    state = (handle.get("status") or {}).get("state")
    return state if state in STATES else None


def is_cleaning(handle: Mapping[str, Any]) -> bool:
    """A handle being cleaned is neither available nor bindable: its pool counts it as coming."""
    return state_of(handle) == CLEANING
